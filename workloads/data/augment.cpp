#include "workloads/data/augment.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace autotune::data {

namespace {

std::uint64_t splitmix(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// Per output pixel: the first source index and fixed-point weights (sum 1 << 14).
struct Taps {
  std::vector<int> first, count;
  std::vector<std::int32_t> weights;  // count.size() × max_taps
  int max_taps = 0;
};

constexpr int kShift = 14;

Taps make_taps(double start, double len, int src_len, int out_len) {
  Taps t;
  const double scale = len / out_len;
  const double support = std::max(scale, 1.0);  // antialias: widen the triangle when downscaling
  t.max_taps = static_cast<int>(std::ceil(support)) * 2 + 2;
  t.first.resize(out_len);
  t.count.resize(out_len);
  t.weights.assign(static_cast<size_t>(out_len) * t.max_taps, 0);
  std::vector<double> w(t.max_taps);
  for (int o = 0; o < out_len; ++o) {
    const double center = start + (o + 0.5) * scale;
    int lo = static_cast<int>(std::floor(center - support));
    int hi = static_cast<int>(std::ceil(center + support));
    lo = std::max(lo, 0);
    hi = std::min(hi, src_len);
    if (hi <= lo) {  // window entirely outside (cannot happen for valid rects): nearest edge pixel
      lo = std::clamp(static_cast<int>(center), 0, src_len - 1);
      hi = lo + 1;
    }
    const int n = std::min(hi - lo, t.max_taps);
    double sum = 0;
    for (int k = 0; k < n; ++k) {
      const double x = (lo + k + 0.5 - center) / support;
      w[k] = std::max(0.0, 1.0 - std::fabs(x));
      sum += w[k];
    }
    if (sum <= 0) {
      w[0] = 1;
      sum = 1;
    }
    std::int32_t acc = 0;
    int last = 0;
    for (int k = 0; k < n; ++k) {
      const auto q = static_cast<std::int32_t>(std::lround(w[k] / sum * (1 << kShift)));
      t.weights[static_cast<size_t>(o) * t.max_taps + k] = q;
      acc += q;
      if (w[k] > 0) last = k;
    }
    t.weights[static_cast<size_t>(o) * t.max_taps + last] += (1 << kShift) - acc;  // exact sum
    t.first[o] = lo;
    t.count[o] = n;
  }
  return t;
}

inline std::uint8_t clip8(std::int32_t v) {
  v = (v + (1 << (kShift - 1))) >> kShift;
  return static_cast<std::uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

}  // namespace

SampleRng::SampleRng(std::uint64_t seed, std::uint64_t epoch, std::uint64_t index) {
  std::uint64_t s = seed ^ 0xA0761D6478BD642FULL;
  state_ = splitmix(s);
  state_ ^= epoch * 0xE7037ED1A0B428DBULL;
  state_ = splitmix(state_);
  state_ ^= index * 0x8EBC6AF09C88C6E3ULL;
}

std::uint64_t SampleRng::next() { return splitmix(state_); }
double SampleRng::uniform(double lo, double hi) { return lo + (hi - lo) * (static_cast<double>(next() >> 11) * 0x1.0p-53); }
std::uint64_t SampleRng::below(std::uint64_t n) { return n ? next() % n : 0; }

CropParams random_resized_crop(int width, int height, SampleRng& rng, double scale_lo, double scale_hi, double ratio_lo,
                               double ratio_hi) {
  CropParams p;
  const double area = static_cast<double>(width) * height;
  const double log_lo = std::log(ratio_lo), log_hi = std::log(ratio_hi);
  bool found = false;
  for (int attempt = 0; attempt < 10 && !found; ++attempt) {
    const double target = area * rng.uniform(scale_lo, scale_hi);
    const double ratio = std::exp(rng.uniform(log_lo, log_hi));
    const int w = static_cast<int>(std::lround(std::sqrt(target * ratio)));
    const int h = static_cast<int>(std::lround(std::sqrt(target / ratio)));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      const int i = static_cast<int>(rng.below(static_cast<std::uint64_t>(height - h + 1)));
      const int j = static_cast<int>(rng.below(static_cast<std::uint64_t>(width - w + 1)));
      p.window = {static_cast<double>(j), static_cast<double>(i), static_cast<double>(w), static_cast<double>(h)};
      found = true;
    }
  }
  if (!found) {  // centre crop at the nearest allowed ratio
    const double in_ratio = static_cast<double>(width) / height;
    int w = width, h = height;
    if (in_ratio < ratio_lo) h = static_cast<int>(std::lround(w / ratio_lo));
    else if (in_ratio > ratio_hi) w = static_cast<int>(std::lround(h * ratio_hi));
    p.window = {static_cast<double>((width - w) / 2), static_cast<double>((height - h) / 2), static_cast<double>(w),
                static_cast<double>(h)};
  }
  p.flip = (rng.next() >> 63) != 0;
  return p;
}

Rect center_square(int width, int height) {
  const int s = std::min(width, height);
  return {static_cast<double>((width - s) / 2), static_cast<double>((height - s) / 2), static_cast<double>(s), static_cast<double>(s)};
}

void resample(const std::uint8_t* rgb, int width, int height, const Rect& r, int out_w, int out_h, bool flip, std::uint8_t* out) {
  const Taps tx = make_taps(r.x, r.w, width, out_w);
  const Taps ty = make_taps(r.y, r.h, height, out_h);
  // Horizontal pass over the source rows the vertical taps touch.
  int row_lo = height, row_hi = 0;
  for (int o = 0; o < out_h; ++o) {
    row_lo = std::min(row_lo, ty.first[o]);
    row_hi = std::max(row_hi, ty.first[o] + ty.count[o]);
  }
  const int rows = std::max(0, row_hi - row_lo);
  std::vector<std::uint8_t> tmp(static_cast<size_t>(rows) * out_w * 3);
  for (int y = 0; y < rows; ++y) {
    const std::uint8_t* s = rgb + static_cast<size_t>(row_lo + y) * width * 3;
    std::uint8_t* d = tmp.data() + static_cast<size_t>(y) * out_w * 3;
    for (int o = 0; o < out_w; ++o) {
      const std::int32_t* w = tx.weights.data() + static_cast<size_t>(o) * tx.max_taps;
      const std::uint8_t* p = s + static_cast<size_t>(tx.first[o]) * 3;
      std::int32_t a0 = 0, a1 = 0, a2 = 0;
      for (int k = 0; k < tx.count[o]; ++k, p += 3) {
        a0 += w[k] * p[0];
        a1 += w[k] * p[1];
        a2 += w[k] * p[2];
      }
      const int dx = flip ? out_w - 1 - o : o;
      d[3 * dx] = clip8(a0);
      d[3 * dx + 1] = clip8(a1);
      d[3 * dx + 2] = clip8(a2);
    }
  }
  // Vertical pass.
  const int stride = out_w * 3;
  std::vector<std::int32_t> acc(static_cast<size_t>(stride));
  for (int o = 0; o < out_h; ++o) {
    std::fill(acc.begin(), acc.end(), 0);
    const std::int32_t* w = ty.weights.data() + static_cast<size_t>(o) * ty.max_taps;
    for (int k = 0; k < ty.count[o]; ++k) {
      const std::uint8_t* s = tmp.data() + static_cast<size_t>(ty.first[o] - row_lo + k) * stride;
      const std::int32_t wk = w[k];
      for (int i = 0; i < stride; ++i) acc[i] += wk * s[i];
    }
    std::uint8_t* d = out + static_cast<size_t>(o) * stride;
    for (int i = 0; i < stride; ++i) d[i] = clip8(acc[i]);
  }
}

}  // namespace autotune::data
