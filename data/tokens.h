#pragma once
// nanoGPT-style token data: a flat little-endian uint16 `.bin` file, memory-mapped; a training
// sample is a random window of T+1 tokens (x = first T, y = last T), deterministic per (seed, step, sample).
#include <cstdint>
#include <string>

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

}  // namespace autotune::data
