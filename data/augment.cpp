#include "data/augment.h"

#include <algorithm>
#include <atomic>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include <cmath>
#include <cstring>
#include <vector>

namespace autotune::data {

namespace {

std::uint64_t splitmix(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// Per output pixel: the first source index and `taps` weights (sum 1), padded to a fixed tap count
/// with zero weights (indices clamped) so the inner loops have no per-pixel trip count.
struct Taps {
  std::vector<int> first;
  std::vector<float> weights;          // out_len × taps
  std::vector<std::int16_t> qweights;  // the same in Q14 (each row sums to exactly 1 << 14), for the AVX2 kernel
  int taps = 0;
};

Taps make_taps(double start, double len, int src_len, int out_len) {
  Taps t;
  const double scale = len / out_len;
  const double support = std::max(scale, 1.0);  // antialias: widen the triangle when downscaling
  t.taps = std::min(static_cast<int>(std::ceil(support)) * 2 + 1, src_len);
  t.first.resize(out_len);
  t.weights.assign(static_cast<size_t>(out_len) * t.taps, 0.f);
  std::vector<double> w(t.taps);
  for (int o = 0; o < out_len; ++o) {
    const double center = start + (o + 0.5) * scale;
    // The taps window: `taps` consecutive source pixels around the centre, inside the image.
    int lo = static_cast<int>(std::floor(center - support + 0.5));
    lo = std::clamp(lo, 0, src_len - t.taps);
    double sum = 0;
    for (int k = 0; k < t.taps; ++k) {
      const double x = (lo + k + 0.5 - center) / support;
      w[k] = std::max(0.0, 1.0 - std::fabs(x));
      sum += w[k];
    }
    if (sum <= 0) {  // centre outside the window (degenerate rect): nearest pixel
      std::fill(w.begin(), w.end(), 0.0);
      w[static_cast<size_t>(std::clamp(static_cast<int>(center) - lo, 0, t.taps - 1))] = 1;
      sum = 1;
    }
    for (int k = 0; k < t.taps; ++k) t.weights[static_cast<size_t>(o) * t.taps + k] = static_cast<float>(w[k] / sum);
    t.first[o] = lo;
  }
  t.qweights.resize(t.weights.size());
  for (int o = 0; o < out_len; ++o) {
    int acc = 0, big = 0;
    for (int k = 0; k < t.taps; ++k) {
      const size_t i = static_cast<size_t>(o) * t.taps + k;
      t.qweights[i] = static_cast<std::int16_t>(t.weights[i] * (1 << 14) + 0.5f);  // weights are ≥ 0
      acc += t.qweights[i];
      if (t.weights[i] > t.weights[static_cast<size_t>(o) * t.taps + big]) big = k;
    }
    t.qweights[static_cast<size_t>(o) * t.taps + big] += static_cast<std::int16_t>((1 << 14) - acc);  // exact sum
  }
  return t;
}

inline std::uint8_t to8(float v) {
  const int i = static_cast<int>(v + 0.5f);
  return static_cast<std::uint8_t>(i < 0 ? 0 : i > 255 ? 255 : i);
}

// Hot loops, compiled twice: AVX2+FMA where the CPU has it (every x86 GPU host), SSE2 otherwise.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define AUTOTUNE_SIMD_CLONES __attribute__((target_clones("avx2,fma", "default")))
#else
#define AUTOTUNE_SIMD_CLONES
#endif

/// Vertical pass: out row o = Σ_k w[o][k] · src row (first[o] + k), over `cols` bytes of each row
/// starting at `x0` (the crop's columns only). Contiguous: vectorises.
AUTOTUNE_SIMD_CLONES
void vertical(const std::uint8_t* src, int src_stride, int x0_bytes, int cols, const Taps& ty, int out_h, float* acc,
              std::uint8_t* dst) {
  for (int o = 0; o < out_h; ++o) {
    const float* w = ty.weights.data() + static_cast<size_t>(o) * ty.taps;
    const std::uint8_t* s0 = src + static_cast<size_t>(ty.first[o]) * src_stride + x0_bytes;
    for (int i = 0; i < cols; ++i) acc[i] = w[0] * s0[i];
    for (int k = 1; k < ty.taps; ++k) {
      const std::uint8_t* s = s0 + static_cast<size_t>(k) * src_stride;
      const float wk = w[k];
      for (int i = 0; i < cols; ++i) acc[i] += wk * s[i];
    }
    std::uint8_t* d = dst + static_cast<size_t>(o) * cols;
    for (int i = 0; i < cols; ++i) d[i] = to8(acc[i]);
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
/// The vertical pass in Q14 fixed point with AVX2: two taps at a time with _mm256_madd_epi16 over 16
/// bytes (interleaved as int16 pairs), int32 accumulators in registers, then >> 14 and saturating packs.
__attribute__((target("avx2"))) void vertical_avx2(const std::uint8_t* src, int src_stride, int x0_bytes, int cols,
                                                   const Taps& ty, int out_h, std::uint8_t* dst) {
  const int taps = ty.taps, vec_end = cols & ~15;
  const __m128i zero = _mm_setzero_si128();
  for (int o = 0; o < out_h; ++o) {
    const std::int16_t* w = ty.qweights.data() + static_cast<size_t>(o) * taps;
    const std::uint8_t* s0 = src + static_cast<size_t>(ty.first[o]) * src_stride + x0_bytes;
    const __m256i round = _mm256_set1_epi32(1 << 13);
    std::uint8_t* d = dst + static_cast<size_t>(o) * cols;
    // Column blocks of 16 bytes through every tap, the two accumulators staying in registers.
    for (int i = 0; i < vec_end; i += 16) {
      __m256i acc0 = round, acc1 = round;
      const std::uint8_t* a = s0 + i;
      for (int k = 0; k < taps; k += 2, a += 2 * static_cast<size_t>(src_stride)) {
        const bool pair = k + 1 < taps;
        const __m128i va = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a));
        const __m128i vb = pair ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + src_stride)) : zero;
        const __m256i wv =
            _mm256_set1_epi32(static_cast<std::uint16_t>(w[k]) | (pair ? static_cast<std::int32_t>(w[k + 1]) << 16 : 0));
        acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(va, vb)), wv));  // a0 b0 …
        acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(_mm256_cvtepu8_epi16(_mm_unpackhi_epi8(va, vb)), wv));
      }
      const __m256i p16 =
          _mm256_permute4x64_epi64(_mm256_packs_epi32(_mm256_srai_epi32(acc0, 14), _mm256_srai_epi32(acc1, 14)), 0xD8);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                       _mm_packus_epi16(_mm256_castsi256_si128(p16), _mm256_extracti128_si256(p16, 1)));
    }
    for (int i = vec_end; i < cols; ++i) {  // the last < 16 bytes
      std::int32_t v = 1 << 13;
      for (int k = 0; k < taps; ++k) v += w[k] * s0[static_cast<size_t>(k) * src_stride + i];
      v >>= 14;
      d[i] = static_cast<std::uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
    }
  }
}

/// Horizontal pass in Q14 with AVX2, straight on 3-byte RGB pixels (no transposes): two output pixels
/// per 256-bit register, one in each 128-bit lane; per tap pair, 8 source bytes (two pixels + 2) are
/// shuffled to int16 (R0 R1 G0 G1 B0 B1 0 0) and _mm256_madd_epi16'd with the pair's weights, giving
/// R, G, B sums as int32. Output pixel o of a row is read from `first_bytes[o]` (flip already applied
/// by the caller's tap order). Each load reads up to 2 bytes past the pair's second pixel, and the
/// second pixel of an odd-tap filter's last pair has weight 0; rows whose reads would leave `src_end`
/// go through a zero-padded copy. Stores write 4 bytes per pixel (the 4th is overwritten by the next
/// pixel) except a row's last pixel, so nothing outside dst's rows is written.
struct HTable {
  std::vector<int> first_bytes;                           // per output pixel (padded to an even count), byte offset in the row
  std::vector<std::int32_t> w;                            // per output pair, per tap pair: 4 × weight pair of o, 4 × of o + 1
  int pairs = 0, tap_pairs = 0, out_w = 0, read_end = 0;  // read_end: furthest byte a row's loads touch
};

HTable make_htable(const Taps& tx, int out_w, bool flip) {
  HTable h;
  h.out_w = out_w;
  h.pairs = (out_w + 1) / 2;
  h.tap_pairs = (tx.taps + 1) / 2;
  h.first_bytes.resize(static_cast<size_t>(h.pairs) * 2);
  h.w.assign(static_cast<size_t>(h.pairs) * h.tap_pairs * 8, 0);
  for (int o = 0; o < h.pairs * 2; ++o) {
    const bool real = o < out_w;
    const int src_o = !real ? 0 : flip ? out_w - 1 - o : o;  // the padding output reuses output 0's taps with zero weights
    h.first_bytes[static_cast<size_t>(o)] = tx.first[src_o] * 3;
    h.read_end = std::max(h.read_end, tx.first[src_o] * 3 + 6 * (h.tap_pairs - 1) + 8);
    for (int j = 0; j < h.tap_pairs; ++j) {
      const std::int16_t* q = tx.qweights.data() + static_cast<size_t>(src_o) * tx.taps;
      const int lo = real ? q[2 * j] : 0, hi = real && 2 * j + 1 < tx.taps ? q[2 * j + 1] : 0;
      const std::int32_t pair =
          static_cast<std::int32_t>(static_cast<std::uint16_t>(lo) | (static_cast<std::uint32_t>(hi) << 16));
      std::int32_t* dst = h.w.data() + (static_cast<size_t>(o / 2) * h.tap_pairs + j) * 8 + (o % 2) * 4;
      std::fill(dst, dst + 4, pair);
    }
  }
  return h;
}

/// Output pixels 2p and 2p + 1 of a row: lane 0 holds R G B of the first in its low 3 bytes, lane 1 the
/// second's. `TapPairs` > 0 fixes the tap-pair count at compile time (unrolled), 0 takes `tap_pairs`.
template <int TapPairs>
__attribute__((target("avx2"), always_inline)) inline __m256i horizontal_pair_avx2(const std::uint8_t* a, const std::uint8_t* b,
                                                                                   const std::int32_t* wp, int tap_pairs) {
  const __m256i shuf = _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1,  //
                                        0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
  if (TapPairs > 0) tap_pairs = TapPairs;
  __m256i acc = _mm256_set1_epi32(1 << 13);
  for (int j = 0; j < tap_pairs; ++j) {
    const __m256i v =
        _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a + 6 * j))),
                                _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + 6 * j)), 1);
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_shuffle_epi8(v, shuf),
                                                  _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + 8 * j))));
  }
  const __m256i v16 = _mm256_packs_epi32(_mm256_srai_epi32(acc, 14), _mm256_setzero_si256());
  return _mm256_packus_epi16(v16, v16);
}

template <int TapPairs>
__attribute__((target("avx2"))) void horizontal_row_avx2(const std::uint8_t* s, const HTable& h, std::uint8_t* d) {
  const int tap_pairs = h.tap_pairs, full_pairs = (h.out_w - 1) / 2;  // full: both 4-byte stores end inside the row
  const int* first = h.first_bytes.data();
  for (int p = 0; p < h.pairs; ++p) {
    const __m256i v8 = horizontal_pair_avx2<TapPairs>(s + first[2 * p], s + first[2 * p + 1],
                                                      h.w.data() + static_cast<size_t>(p) * tap_pairs * 8, tap_pairs);
    if (p < full_pairs) {
      _mm_storeu_si32(d + 6 * p, _mm256_castsi256_si128(v8));
      _mm_storeu_si32(d + 6 * p + 3, _mm256_extracti128_si256(v8, 1));
    } else {  // the row's last pixel(s): exactly 3 bytes each
      alignas(32) std::uint8_t tmp[32];
      _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), v8);
      std::memcpy(d + 6 * p, tmp, 3);
      if (2 * p + 1 < h.out_w) std::memcpy(d + 6 * p + 3, tmp + 16, 3);
    }
  }
}

__attribute__((target("avx2"))) void horizontal_avx2(const std::uint8_t* src, int src_stride, int rows,
                                                     const std::uint8_t* src_end, const HTable& h, std::uint8_t* dst,
                                                     int dst_stride) {
  thread_local std::vector<std::uint8_t> padded;
  for (int r = 0; r < rows; ++r) {
    const std::uint8_t* s = src + static_cast<size_t>(r) * src_stride;
    if (s + h.read_end > src_end) {  // the buffer's last row(s): read from a zero-padded copy
      padded.assign(static_cast<size_t>(h.read_end) + 16, 0);
      std::memcpy(padded.data(), s, static_cast<size_t>(src_end - s));
      s = padded.data();
    }
    std::uint8_t* d = dst + static_cast<size_t>(r) * dst_stride;
    switch (h.tap_pairs) {  // 3–7 taps cover crop windows up to 3× the output size
      case 2:
        horizontal_row_avx2<2>(s, h, d);
        break;
      case 3:
        horizontal_row_avx2<3>(s, h, d);
        break;
      case 4:
        horizontal_row_avx2<4>(s, h, d);
        break;
      default:
        horizontal_row_avx2<0>(s, h, d);
        break;
    }
  }
}
#endif

std::atomic<bool>& simd_flag() {
  static std::atomic<bool> on{true};
  return on;
}
bool simd_enabled() { return simd_flag().load(std::memory_order_relaxed); }

/// Transposes a rows × cols image of 3-byte pixels into cols × rows; with `flip`, output rows are
/// mirrored (column c of the input becomes output column rows − 1 − … — used for the horizontal flip).
void transpose3(const std::uint8_t* src, int rows, int cols, bool flip, std::uint8_t* dst) {
  constexpr int kBlock = 32;  // cache blocking
  for (int r0 = 0; r0 < rows; r0 += kBlock)
    for (int c0 = 0; c0 < cols; c0 += kBlock)
      for (int r = r0; r < std::min(rows, r0 + kBlock); ++r) {
        const std::uint8_t* s = src + (static_cast<size_t>(r) * cols + c0) * 3;
        const int dc = flip ? rows - 1 - r : r;
        for (int c = c0; c < std::min(cols, c0 + kBlock); ++c, s += 3) {
          std::uint8_t* d = dst + (static_cast<size_t>(c) * rows + dc) * 3;
          d[0] = s[0];
          d[1] = s[1];
          d[2] = s[2];
        }
      }
}

}  // namespace

void set_resample_simd(bool enabled) { simd_flag().store(enabled); }

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
  return {static_cast<double>((width - s) / 2), static_cast<double>((height - s) / 2), static_cast<double>(s),
          static_cast<double>(s)};
}

void resample(const std::uint8_t* rgb, int width, int height, const Rect& r, int out_w, int out_h, bool flip, std::uint8_t* out) {
  Taps tx = make_taps(r.x, r.w, width, out_w);
  Taps ty = make_taps(r.y, r.h, height, out_h);
  // Only the columns the horizontal taps touch are processed.
  int col_lo = width, col_hi = 0;
  for (int o = 0; o < out_w; ++o) {
    col_lo = std::min(col_lo, tx.first[o]);
    col_hi = std::max(col_hi, tx.first[o] + tx.taps);
  }
  for (int& f : tx.first) f -= col_lo;
  const int cols = std::max(0, col_hi - col_lo);
  thread_local std::vector<std::uint8_t> t1, t2, t3;
  thread_local std::vector<float> acc;
  auto grow = [](auto& v, size_t n) {  // grow only: resize() after a shrink would zero-fill on every call
    if (v.size() < n) v.resize(n);
  };
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2 && simd_enabled()) {
    // Fixed point, no transposes: the vertical pass (16 bytes of a row at a time) and the horizontal
    // one (two pixels at a time), in the order that runs the costlier horizontal pass over fewer rows:
    // vertical first when the window is taller than the output (downscaling), else horizontal first.
    const HTable h = make_htable(tx, out_w, flip);
    const int row_lo = ty.first.front(), row_hi = ty.first.back() + ty.taps;  // source rows the vertical taps touch
    const std::uint8_t* src_end = rgb + static_cast<size_t>(width) * height * 3;
    if (row_hi - row_lo > out_h) {
      grow(t1, static_cast<size_t>(out_h) * cols * 3 + 16);
      vertical_avx2(rgb, width * 3, col_lo * 3, cols * 3, ty, out_h, t1.data());  // out_h × cols
      horizontal_avx2(t1.data(), cols * 3, out_h, t1.data() + t1.size(), h, out, out_w * 3);
    } else {
      const int rows = row_hi - row_lo;
      grow(t1, static_cast<size_t>(rows) * out_w * 3 + 16);
      horizontal_avx2(rgb + (static_cast<size_t>(row_lo) * width + col_lo) * 3, width * 3, rows, src_end, h, t1.data(),
                      out_w * 3);
      for (int& f : ty.first) f -= row_lo;
      vertical_avx2(t1.data(), out_w * 3, 0, out_w * 3, ty, out_h, out);  // rows × out_w → out_h × out_w
    }
    return;
  }
#endif
  // Portable: both passes as float vertical passes (contiguous rows vectorise), the horizontal one on
  // the transposed intermediate.
  grow(t1, static_cast<size_t>(out_h) * cols * 3);
  grow(t2, static_cast<size_t>(out_h) * cols * 3);
  grow(t3, static_cast<size_t>(out_w) * out_h * 3);
  grow(acc, static_cast<size_t>(std::max(cols, out_h) * 3));
  vertical(rgb, width * 3, col_lo * 3, cols * 3, ty, out_h, acc.data(), t1.data());  // out_h × cols
  transpose3(t1.data(), out_h, cols, false, t2.data());                              // cols × out_h
  vertical(t2.data(), out_h * 3, 0, out_h * 3, tx, out_w, acc.data(), t3.data());    // out_w × out_h
  transpose3(t3.data(), out_w, out_h, flip, out);                                    // out_h × out_w
}

}  // namespace autotune::data
