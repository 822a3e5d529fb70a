#pragma once
// The pre-decoded image cache (`autotune prepare-data`), format version 1, little-endian:
//
//   offset 0   header, 72 bytes
//     char[8]  magic "ATUNEIMG"
//     u32      version (1)            u32  header_size (72)
//     u64      count (images)         u32  side (S: every image is S×S×3 uint8, RGB, HWC)
//     u32      channels (3)           u32  num_classes            u32 reserved (0)
//     u64      names_offset           u64  labels_offset          u64 pixels_offset
//     u64      checksum: FNV-1a 64 over every byte after the header
//   names      num_classes × (u32 length + UTF-8 bytes): the class folder names
//   labels     count × i32
//   pixels     at a 4096-aligned offset: count × S·S·3 bytes, image i at pixels_offset + i·S·S·3
//
// Each image is the source's shorter side resized to S and the centre S×S square (antialiased
// bilinear). The loader maps the file read-only and applies RandomResizedCrop + flip to the S×S
// image. A file whose size does not match its header is "truncated"; a wrong magic is "not an
// autotune image cache"; both are one-line errors naming the file.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "data/image_source.h"

namespace autotune::data {

inline constexpr char kCacheMagic[8] = {'A', 'T', 'U', 'N', 'E', 'I', 'M', 'G'};
inline constexpr std::uint32_t kCacheVersion = 1;

struct PrepareOptions {
  std::string from, to;
  int side = 256;
  bool force = false;           ///< replace an existing `to`
  int threads = 0;              ///< 0 = all cores
  double max_bad_share = 0.01;  ///< fail when more than this share of files is bad
};

struct PrepareReport {
  std::int64_t written = 0;
  std::int64_t bytes = 0;
  double seconds = 0;
  std::string bad;  ///< BadDataCounter::describe()
};

/// Decodes every JPEG of the folder (bad files skipped and counted), writes FILE.tmp, verifies it,
/// renames it to FILE. Refuses an existing FILE without `force` (UsageError). Throws when more than
/// max_bad_share of the files are bad (nothing is left behind).
PrepareReport prepare_cache(const PrepareOptions& opts);

/// A mapped cache file.
class CacheFile {
 public:
  /// Maps `path`; checks magic, version and size (one-line std::runtime_error naming the file).
  explicit CacheFile(const std::string& path);
  ~CacheFile();
  CacheFile(const CacheFile&) = delete;
  CacheFile& operator=(const CacheFile&) = delete;

  std::size_t count() const { return count_; }
  int side() const { return side_; }
  const std::vector<std::string>& classes() const { return classes_; }
  /// The labels sit after the variable-length class names: not 4-byte aligned, so read byte-wise
  /// (a misaligned int32 load is undefined behaviour; UBSan found it through tests/fuzz).
  std::int32_t label(std::size_t i) const {
    std::int32_t v;
    std::memcpy(&v, labels_ + i * sizeof v, sizeof v);
    return v;
  }
  const std::uint8_t* pixels(std::size_t i) const { return pixels_ + i * static_cast<std::size_t>(side_) * side_ * 3; }
  /// Recomputes the checksum over the whole file; throws naming the file when it differs.
  void verify() const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  void* map_ = nullptr;
  std::size_t map_size_ = 0;
  std::size_t count_ = 0;
  int side_ = 0;
  std::uint64_t checksum_ = 0;
  std::vector<std::string> classes_;
  const std::uint8_t* labels_ = nullptr;
  const std::uint8_t* pixels_ = nullptr;
};

/// ImageSource over a cache file (decode mode `cache`).
std::unique_ptr<ImageSource> make_cache_source(const std::string& path);

}  // namespace autotune::data
