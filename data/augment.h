#pragma once
// Augmentation on 8-bit RGB, LibTorch-free: torchvision's RandomResizedCrop parameters (scale
// 0.08–1, ratio 3/4–4/3, 10 tries then a centre crop), an antialiased bilinear resample (a triangle
// filter widened by the downscale factor, as PIL does), and horizontal flip. Randomness is a pure
// function of (seed, epoch, index): any worker, any order, the same crop.
#include <cstdint>

#include "data/jpeg.h"

namespace autotune::data {

/// splitmix64-based stream seeded by (seed, epoch, index).
class SampleRng {
 public:
  SampleRng(std::uint64_t seed, std::uint64_t epoch, std::uint64_t index);
  std::uint64_t next();
  double uniform(double lo, double hi);  ///< [lo, hi)
  std::uint64_t below(std::uint64_t n);  ///< [0, n)

 private:
  std::uint64_t state_;
};

struct CropParams {
  Rect window;  ///< in full-size pixels (integers, as torchvision)
  bool flip = false;
};

/// torchvision.transforms.RandomResizedCrop.get_params + RandomHorizontalFlip(0.5).
CropParams random_resized_crop(int width, int height, SampleRng& rng, double scale_lo = 0.08, double scale_hi = 1.0,
                               double ratio_lo = 3.0 / 4.0, double ratio_hi = 4.0 / 3.0);
/// Shorter side to `size`, centre square (for the pre-decoded cache and evaluation).
Rect center_square(int width, int height);

/// Resamples `src`'s rectangle `r` (fractional, in src pixels) to `out_w`×`out_h`, flipped
/// horizontally when `flip`, into `out` (HWC RGB, out_w·out_h·3 bytes).
void resample(const std::uint8_t* rgb, int width, int height, const Rect& r, int out_w, int out_h, bool flip, std::uint8_t* out);
/// Tests: false forces the portable float kernel even where the AVX2 fixed-point one would run.
void set_resample_simd(bool enabled);

inline void resample(const Image& src, const Rect& r, int out_w, int out_h, bool flip, std::uint8_t* out) {
  resample(src.rgb.data(), src.width, src.height, r, out_w, out_h, flip, out);
}

}  // namespace autotune::data
