#pragma once
// nanoGPT-style token data: a flat little-endian uint16 `.bin` file, memory-mapped; a training
// sample is a random window of T+1 tokens (x = first T, y = last T), deterministic per (seed, step, sample).
#include <cstdint>
#include <string>
#include <vector>

namespace autotune::data {

class TokenFile {
 public:
  /// Throws std::runtime_error (one line, naming the file) when it is missing, has an odd size, or
  /// holds fewer than `min_tokens`.
  TokenFile(const std::string& path, std::size_t min_tokens);
  ~TokenFile();
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;
  std::size_t size() const { return n_; }
  const std::uint16_t* tokens() const { return tokens_; }
  std::uint16_t max_token() const;  ///< scans the file once

  /// Batch `step`: `batch` windows of `t`+1 tokens → x, y (each batch × t, int64). Sample i of the batch
  /// is sample `first_sample` + i of global batch `step` (a data-parallel rank's slice; 0 otherwise).
  void fill_batch(std::uint64_t seed, std::uint64_t step, int batch, int t, std::int64_t* x, std::int64_t* y,
                  std::uint64_t first_sample = 0) const;

 private:
  std::string path_;
  void* map_ = nullptr;
  std::size_t bytes_ = 0, n_ = 0;
  const std::uint16_t* tokens_ = nullptr;
};

/// A byte-level token file from text: every byte of every source becomes one uint16 token (0–255, a
/// vocabulary of 256 that gpt-mini's 512 holds), the files in sorted path order, each followed by a
/// newline (10). A folder source contributes its regular files, recursively. Written through a
/// temporary file and a rename; an existing `to` is refused unless `force`. Throws UsageError naming
/// the path for a missing source, an empty result or an existing `to`.
struct ByteTokensReport {
  std::int64_t files = 0, tokens = 0;
};
ByteTokensReport write_byte_tokens(const std::vector<std::string>& sources, const std::string& to, bool force);

}  // namespace autotune::data
