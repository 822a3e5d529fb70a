#pragma once
// Where training images come from, LibTorch-free: an ImageNet-layout folder decoded with
// libjpeg-turbo (decode modes jpeg_full / jpeg_crop_scale), or a pre-decoded cache file (mode
// cache, written by `autotune prepare-data`, memory-mapped). Each source turns a sample index into
// an augmented uint8 RGB crop (RandomResizedCrop + flip), deterministic per (seed, epoch, index).
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "data/augment.h"
#include "data/jpeg.h"

namespace autotune::data {

enum class DecodeMode { jpeg_full, jpeg_crop_scale, cache };
std::string to_string(DecodeMode m);
DecodeMode decode_mode_from_string(const std::string& s);  ///< throws UsageError listing the modes

/// Class sub-folders (sorted) and their JPEG files (sorted): torchvision's ImageFolder order.
struct ImageFolder {
  std::string root;
  std::vector<std::string> classes;
  std::vector<std::string> files;  ///< paths
  std::vector<std::int32_t> labels;
  /// Throws UsageError (one line) for a missing folder, a file instead of a folder, a folder with
  /// no class sub-folders, or class folders with no .jpg/.jpeg files.
  static ImageFolder scan(const std::string& root);
};

/// Bad files met while producing samples, by reason. Thread-safe.
class BadDataCounter {
 public:
  void add(BadReason r, const std::string& file, const std::string& what);
  void add_ok();
  std::int64_t ok() const;
  std::int64_t bad() const;
  std::map<std::string, std::int64_t> by_reason() const;
  std::vector<std::string> examples() const;  ///< up to 5 "file: reason"
  /// "3 of 1,000 images bad (0.3%): truncated 2, not_jpeg 1"
  std::string describe() const;
  /// Throws std::runtime_error with describe() when bad / (ok + bad) > max_share.
  void check(double max_share) const;

 private:
  mutable std::mutex mu_;
  std::int64_t ok_ = 0;
  std::map<std::string, std::int64_t> bad_;
  std::vector<std::string> examples_;
};

class ImageSource {
 public:
  virtual ~ImageSource() = default;
  virtual std::size_t size() const = 0;
  virtual std::int32_t label(std::size_t i) const = 0;
  virtual std::string name(std::size_t i) const = 0;
  /// One training sample: RandomResizedCrop of image i to out×out, flipped per the rng, written as
  /// HWC uint8 to `out`. Throws DecodeError for a bad file (the loader skips and counts it).
  virtual void sample(std::size_t i, SampleRng& rng, int out_size, std::uint8_t* out) const = 0;
  virtual int num_classes() const = 0;
  /// Side of the fixed-size images `raw_sample` returns (the pre-decoded cache), 0 when the source
  /// has no such form (JPEG files differ in size and must be cropped where they are decoded).
  virtual int raw_side() const { return 0; }
  /// Image i as stored (raw_side² × 3 uint8, HWC) and the RandomResizedCrop + flip that `sample`
  /// would apply, drawn from `rng` identically: for augmentation on the GPU (augment_device=gpu).
  virtual CropParams raw_sample(std::size_t i, SampleRng& rng, std::uint8_t* out) const;
};

std::unique_ptr<ImageSource> make_folder_source(const ImageFolder& folder, DecodeMode mode);

/// Fills a batch of `n` samples starting at sample position `first` of epoch-ordered indices
/// (`order[pos % size]`): bad files are skipped (counted) and replaced by the next file in order,
/// so every batch is full and deterministic. Pixels as uint8 NHWC, labels int64.
void fill_image_batch(const ImageSource& src, const std::vector<std::uint32_t>& order, std::uint64_t seed, std::uint64_t epoch,
                      std::uint64_t first, int n, int out_size, std::uint8_t* pixels, std::int64_t* labels, BadDataCounter& bad);

/// As fill_image_batch, but each sample is the stored raw_side² image plus its crop, for augmentation
/// on the device: `crops` gets 5 floats per sample (window x, y, w, h in pixels; flip 0/1).
void fill_raw_batch(const ImageSource& src, const std::vector<std::uint32_t>& order, std::uint64_t seed, std::uint64_t epoch,
                    std::uint64_t first, int n, std::uint8_t* pixels, std::int64_t* labels, float* crops, BadDataCounter& bad);
/// A seeded permutation of [0, n) for an epoch (Fisher–Yates on SampleRng).
std::vector<std::uint32_t> epoch_order(std::size_t n, std::uint64_t seed, std::uint64_t epoch);

}  // namespace autotune::data
