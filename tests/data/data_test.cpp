// The LibTorch-free input pipeline: decode modes, augmentation, bad data, the cache file, tokens and
// the threaded loader. Fixtures: real photos from Debian packages (scripts/fetch-test-images.sh) when
// present, and JPEGs encoded here with tjCompress2 from them (grayscale, CMYK, truncated copies).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "knobs/error.h"
#include "tests/support/expect_throw_msg.h"
#include "tests/support/temp_dir.h"
#include "data/augment.h"
#include "data/cache_file.h"
#include "data/image_source.h"
#include "data/jpeg.h"
#include "data/loader.h"
#include "data/tokens.h"

namespace autotune::data {
namespace {

namespace fs = std::filesystem;
using autotune::testing::TempDir;

std::string images_dir() {
  const char* c = std::getenv("AUTOTUNE_CACHE");
  const std::string base = c ? c : std::string(std::getenv("HOME") ? std::getenv("HOME") : "/root") + "/.cache/autotune";
  return base + "/test-images";
}

/// A real photo when fetched, else a deterministic textured image (gradients + hash noise).
Image photo(int w = 500, int h = 375) {
  const std::string p = images_dir() + "/photos/china.jpg";
  if (fs::exists(p)) {
    const auto bytes = read_bytes(p);
    const Image full = decode_full(bytes.data(), bytes.size());
    Image out;
    out.width = w;
    out.height = h;
    out.rgb.resize(static_cast<size_t>(w) * h * 3);
    resample(full, {0, 0, static_cast<double>(full.width), static_cast<double>(full.height)}, w, h, false, out.rgb.data());
    return out;
  }
  Image img;
  img.width = w;
  img.height = h;
  img.rgb.resize(static_cast<size_t>(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const unsigned n = (x * 73856093u) ^ (y * 19349663u);
      img.rgb[(static_cast<size_t>(y) * w + x) * 3 + 0] = static_cast<std::uint8_t>((x * 255 / w + (n & 15)) & 255);
      img.rgb[(static_cast<size_t>(y) * w + x) * 3 + 1] = static_cast<std::uint8_t>((y * 255 / h + ((n >> 4) & 15)) & 255);
      img.rgb[(static_cast<size_t>(y) * w + x) * 3 + 2] =
          static_cast<std::uint8_t>(((x + y) * 128 / (w + h) + ((n >> 8) & 31)) & 255);
    }
  return img;
}

void write(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

double mean_abs_diff(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += std::abs(static_cast<int>(a[i]) - static_cast<int>(b[i]));
  return s / static_cast<double>(a.size());
}

/// A 1×1 PNG (a real one: signature, IHDR, IDAT, IEND).
const std::vector<std::uint8_t> kPng = {0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48,
                                        0x44, 0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00,
                                        0x00, 0x1F, 0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78,
                                        0x9C, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00,
                                        0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82};

/// ROOT/a/*.jpg, ROOT/b/*.jpg: `n` good photos per class (different crops of the photo).
void make_folder(const std::string& root, int n) {
  const Image p = photo(640, 480);
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < n; ++i) {
      Image v;
      v.width = 500;
      v.height = 375;
      v.rgb.resize(500 * 375 * 3);
      resample(p, {static_cast<double>(i * 7 % 140), static_cast<double>(c * 50 + i * 3 % 100), 500, 375}, 500, 375, c == 1,
               v.rgb.data());
      write(root + "/" + (c ? "b" : "a") + "/img" + std::to_string(i) + ".jpg", encode_jpeg(v, 90));
    }
}

TEST(Jpeg, DecodeModesAgreeOnTheSameCrop) {
  const auto bytes = encode_jpeg(photo(), 90);
  const Image full = decode_full(bytes.data(), bytes.size());
  ASSERT_EQ(full.width, 500);
  ASSERT_EQ(full.height, 375);
  for (int out : {224, 64}) {
    double worst = 0;
    for (std::uint64_t idx = 0; idx < 30; ++idx) {
      SampleRng rng(7, 0, idx);
      const CropParams p = random_resized_crop(full.width, full.height, rng);
      std::vector<std::uint8_t> a(static_cast<size_t>(out) * out * 3), b(a.size());
      resample(full, p.window, out, out, p.flip, a.data());
      const int d = choose_scale_denom(p.window.w, p.window.h, out, out);
      const RegionImage r = decode_region(bytes.data(), bytes.size(), p.window, d);
      EXPECT_LE(r.image.width, full.width / d + 16);  // only the window's columns (iMCU-aligned) were decoded
      resample(r.image, r.window_in_image, out, out, p.flip, b.data());
      worst = std::max(worst, mean_abs_diff(a, b));
    }
    // DCT-domain downscaling is not the same filter as decode-then-resample; on a photo the two stay
    // within a few levels of 255 on average.
    EXPECT_LT(worst, out == 64 ? 5.0 : 6.0) << "output " << out;
    std::cout << "decode modes, output " << out << ": worst mean abs diff over 30 crops " << worst << " of 255\n";
  }
}

TEST(Jpeg, CropScaleUsesTheLargestDctScaleThatKeepsTheTarget) {
  EXPECT_EQ(choose_scale_denom(1800, 1800, 224, 224), 8);
  EXPECT_EQ(choose_scale_denom(1000, 1000, 224, 224), 4);
  EXPECT_EQ(choose_scale_denom(460, 500, 224, 224), 2);
  EXPECT_EQ(choose_scale_denom(300, 300, 224, 224), 1);
  EXPECT_EQ(choose_scale_denom(400, 100, 64, 64), 1);
}

TEST(Jpeg, GrayscaleAndCmykComeOutAsRgb) {
  const Image p = photo();
  const auto rgb_bytes = encode_jpeg(p, 95, true);
  const Image ref = decode_full(rgb_bytes.data(), rgb_bytes.size());
  const auto gray = encode_jpeg_gray(p, 95);
  EXPECT_TRUE(read_header(gray.data(), gray.size()).grayscale);
  const Image g = decode_full(gray.data(), gray.size());
  ASSERT_EQ(g.rgb.size(), ref.rgb.size());
  for (size_t i = 0; i < g.rgb.size(); i += 3) ASSERT_TRUE(g.rgb[i] == g.rgb[i + 1] && g.rgb[i] == g.rgb[i + 2]);
  const auto cmyk = encode_jpeg_cmyk(p, 95);
  EXPECT_TRUE(read_header(cmyk.data(), cmyk.size()).cmyk);
  const Image c = decode_full(cmyk.data(), cmyk.size());
  ASSERT_EQ(c.rgb.size(), ref.rgb.size());
  EXPECT_LT(mean_abs_diff(c.rgb, ref.rgb), 4.0);  // the same colours back, within JPEG loss
  // The region path converts CMYK too.
  const RegionImage r = decode_region(cmyk.data(), cmyk.size(), {100, 100, 200, 150}, 2);
  EXPECT_GT(r.image.width, 0);
}

TEST(Jpeg, BadFilesAreClassified) {
  auto reason = [](const std::vector<std::uint8_t>& b) {
    try {
      decode_full(b.data(), b.size());
    } catch (const DecodeError& e) {
      return to_string(e.reason);
    }
    return std::string("ok");
  };
  const auto good = encode_jpeg(photo(), 90);
  EXPECT_EQ(reason(good), "ok");
  EXPECT_EQ(reason({}), "empty");
  EXPECT_EQ(reason(kPng), "not_jpeg");
  EXPECT_EQ(reason({'h', 'e', 'l', 'l', 'o'}), "not_jpeg");
  EXPECT_EQ(reason(std::vector<std::uint8_t>(good.begin(), good.begin() + good.size() * 6 / 10)), "truncated");
  std::vector<std::uint8_t> garbled = good;
  for (size_t i = 200; i < 260; ++i) garbled[i] = 0x00;  // wipe part of the headers/tables
  EXPECT_NE(reason(garbled), "truncated");
  const std::string skimage_truncated = images_dir() + "/truncated.jpg";
  if (fs::exists(skimage_truncated)) {
    EXPECT_EQ(reason(read_bytes(skimage_truncated)), "truncated");
  }
  try {
    read_bytes("/nonexistent/x.jpg");
    FAIL();
  } catch (const DecodeError& e) {
    EXPECT_EQ(e.reason, BadReason::unreadable);
  }
}

TEST(Augment, RandomResizedCropIsDeterministicAndWithinTorchvisionsRanges) {
  int flips = 0;
  for (std::uint64_t i = 0; i < 2000; ++i) {
    SampleRng a(1, 2, i), b(1, 2, i);
    const CropParams p = random_resized_crop(500, 375, a), q = random_resized_crop(500, 375, b);
    ASSERT_EQ(p.window.x, q.window.x);
    ASSERT_EQ(p.window.w, q.window.w);
    ASSERT_EQ(p.flip, q.flip);
    ASSERT_GE(p.window.x, 0);
    ASSERT_LE(p.window.x + p.window.w, 500);
    ASSERT_LE(p.window.y + p.window.h, 375);
    const double area = p.window.w * p.window.h / (500.0 * 375.0);
    ASSERT_LE(area, 1.0 + 1e-9);
    flips += p.flip;
  }
  EXPECT_NEAR(flips / 2000.0, 0.5, 0.05);
  SampleRng e0(1, 0, 5), e1(1, 1, 5);
  EXPECT_NE(random_resized_crop(500, 375, e0).window.x + 1000 * random_resized_crop(500, 375, e0).window.w,
            random_resized_crop(500, 375, e1).window.x + 1000 * random_resized_crop(500, 375, e1).window.w);
}

TEST(Augment, ResampleOfTheWholeImageAtSameSizeIsIdentityAndFlipMirrors) {
  const Image p = photo(64, 48);
  std::vector<std::uint8_t> same(p.rgb.size()), flipped(p.rgb.size());
  resample(p, {0, 0, 64, 48}, 64, 48, false, same.data());
  EXPECT_EQ(same, p.rgb);
  resample(p, {0, 0, 64, 48}, 64, 48, true, flipped.data());
  for (int y = 0; y < 48; ++y)
    for (int x = 0; x < 64; ++x)
      for (int c = 0; c < 3; ++c) ASSERT_EQ(flipped[(y * 64 + x) * 3 + c], p.rgb[(y * 64 + 63 - x) * 3 + c]);
}

TEST(Augment, TheAvx2AndPortableKernelsAgreeWithinTwoLevels) {
  const Image p = photo();
  for (std::uint64_t i = 0; i < 20; ++i) {
    SampleRng rng(3, 0, i);
    const CropParams c = random_resized_crop(p.width, p.height, rng);
    std::vector<std::uint8_t> fast(224 * 224 * 3), portable(fast.size());
    resample(p, c.window, 224, 224, c.flip, fast.data());
    set_resample_simd(false);
    resample(p, c.window, 224, 224, c.flip, portable.data());
    set_resample_simd(true);
    int worst = 0;
    for (size_t k = 0; k < fast.size(); ++k) worst = std::max(worst, std::abs(fast[k] - portable[k]));
    EXPECT_LE(worst, 2) << "crop " << i;  // Q14 fixed point vs float rounding, two passes
  }
}

TEST(Augment, TheAvx2PassOrdersAgreeWithThePortableKernelOnEdgeCases) {
  // Windows taller than the output run vertical-first, shorter ones horizontal-first; odd output
  // widths end rows on a single pixel; windows on the bottom-right corner make the horizontal pass
  // read the buffer's last row (through a padded copy); sources a few pixels wide keep every read
  // near the end. Each case against the portable float kernel, flipped and not.
  struct Case {
    int src_w, src_h;
    Rect window;
    int out_w, out_h;
  };
  const std::vector<Case> cases = {
      {500, 375, {0, 0, 500, 375}, 224, 224},          // downscale, whole image (vertical first)
      {500, 375, {380, 290, 120, 85}, 224, 224},       // upscale at the bottom-right corner (horizontal first)
      {500, 375, {10.5, 20.25, 99.5, 60.75}, 37, 23},  // fractional window, odd output
      {64, 48, {0, 0, 64, 48}, 1, 1},                  // one pixel
      {3, 2, {0, 0, 3, 2}, 7, 5},                      // a 3×2 source, upscaled
      {640, 480, {0, 0, 640, 480}, 31, 480},           // wide downscale, tall output
  };
  for (const Case& c : cases) {
    const Image p = photo(c.src_w, c.src_h);
    // Exactly-sized heap copy: reads past its end would be caught by ASan/valgrind.
    std::vector<std::uint8_t> src(p.rgb.begin(), p.rgb.end());
    for (bool flip : {false, true}) {
      std::vector<std::uint8_t> fast(static_cast<size_t>(c.out_w) * c.out_h * 3 + 8, 0xAB), portable(fast.size(), 0xAB);
      resample(src.data(), c.src_w, c.src_h, c.window, c.out_w, c.out_h, flip, fast.data());
      set_resample_simd(false);
      resample(src.data(), c.src_w, c.src_h, c.window, c.out_w, c.out_h, flip, portable.data());
      set_resample_simd(true);
      int worst = 0;
      for (size_t k = 0; k + 8 < fast.size(); ++k) worst = std::max(worst, std::abs(fast[k] - portable[k]));
      EXPECT_LE(worst, 2) << c.src_w << "x" << c.src_h << " → " << c.out_w << "x" << c.out_h << " flip " << flip;
      for (size_t k = fast.size() - 8; k < fast.size(); ++k)  // nothing written past the output
        ASSERT_EQ(fast[k], 0xAB) << c.out_w << "x" << c.out_h;
    }
  }
}

TEST(Folder, ErrorsAreOneLine) {
  TempDir dir;
  EXPECT_THROW_MSG(ImageFolder::scan(dir / "missing"), UsageError, "image folder " + (dir / "missing") + " does not exist");
  write(dir / "file.jpg", {1});
  EXPECT_THROW_MSG(ImageFolder::scan(dir / "file.jpg"), UsageError,
                   dir / "file.jpg" + " is not a folder; expected an image folder with one sub-folder per class");
  fs::create_directories(dir / "empty");
  EXPECT_THROW_MSG(ImageFolder::scan(dir / "empty"), UsageError,
                   dir / "empty" + " has no class sub-folders (it is empty); expected ImageNet layout: ROOT/<class>/<image>.jpg");
  EXPECT_THROW_MSG(ImageFolder::scan(dir.str()), UsageError,
                   dir.str() + " has 1 class sub-folders but no .jpg/.jpeg files in them");
  fs::create_directories(dir / "loose");
  write(dir / "loose/a.jpg", {1});
  EXPECT_THROW_MSG(ImageFolder::scan(dir / "loose"), UsageError,
                   dir / "loose" +
                       " has no class sub-folders (only loose files); expected ImageNet layout: ROOT/<class>/<image>.jpg");
  EXPECT_THROW_MSG(decode_mode_from_string("turbo"), UsageError,
                   "decode mode 'turbo' is not known; allowed: jpeg_full, jpeg_crop_scale, cache");
}

TEST(Folder, BadFilesAreSkippedCountedAndTheShareIsEnforced) {
  TempDir dir;
  make_folder(dir / "data", 6);
  const auto good = encode_jpeg(photo(), 90);
  write(dir / "data/a/zero.jpg", {});
  write(dir / "data/a/png.jpg", kPng);
  write(dir / "data/b/cut.jpg", std::vector<std::uint8_t>(good.begin(), good.begin() + good.size() / 2));
  write(dir / "data/b/cmyk.jpg", encode_jpeg_cmyk(photo(), 90));   // converted, not skipped
  write(dir / "data/b/gray.JPEG", encode_jpeg_gray(photo(), 90));  // converted, not skipped
  if (fs::exists(images_dir() + "/truncated.jpg"))
    fs::copy_file(images_dir() + "/truncated.jpg", dir / "data/b/skimage_truncated.jpg");
  const ImageFolder f = ImageFolder::scan(dir / "data");
  EXPECT_EQ(f.classes, (std::vector<std::string>{"a", "b"}));
  for (auto mode : {DecodeMode::jpeg_full, DecodeMode::jpeg_crop_scale}) {
    const auto src = make_folder_source(f, mode);
    BadDataCounter bad;
    const auto order = epoch_order(f.files.size(), 3, 0);
    std::vector<std::uint8_t> px(static_cast<size_t>(f.files.size()) * 32 * 32 * 3);
    std::vector<std::int64_t> labels(f.files.size());
    // One pass over the epoch in batches of 4 (the last wraps): every file is tried at least once.
    for (std::uint64_t first = 0; first < f.files.size(); first += 4)
      fill_image_batch(*src, order, 3, 0, first, 4, 32, px.data(), labels.data(), bad);
    const auto by = bad.by_reason();
    EXPECT_GE(by.at("empty"), 1) << bad.describe();
    EXPECT_GE(by.at("not_jpeg"), 1);
    EXPECT_GE(by.at("truncated"), fs::exists(images_dir() + "/truncated.jpg") ? 2 : 1);
    EXPECT_EQ(by.count("corrupt"), 0u) << bad.describe();  // CMYK and grayscale decoded fine
    EXPECT_NE(bad.describe().find("images bad"), std::string::npos);
    try {
      bad.check(0.01);
      FAIL() << "more than 1% bad must fail";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("too much bad data: "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("more than the allowed 1%"), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(bad.check(0.5));
  }
}

TEST(Folder, SamplesAreDeterministicAcrossRunsAndDifferPerIndex) {
  TempDir dir;
  make_folder(dir / "data", 3);
  const ImageFolder f = ImageFolder::scan(dir / "data");
  const auto src = make_folder_source(f, DecodeMode::jpeg_crop_scale);
  std::vector<std::uint8_t> a(64 * 64 * 3), b(a.size()), c(a.size());
  SampleRng r1(9, 0, 2), r2(9, 0, 2), r3(9, 1, 2);
  src->sample(2, r1, 64, a.data());
  src->sample(2, r2, 64, b.data());
  src->sample(2, r3, 64, c.data());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);  // another epoch, another crop
}

TEST(Cache, RoundTripRefusalsAndDamage) {
  TempDir dir;
  make_folder(dir / "data", 4);
  write(dir / "data/a/zero.jpg", {});  // 1 of 9 bad: allowed only with a higher share
  PrepareOptions o;
  o.from = dir / "data";
  o.to = dir / "cache.bin";
  o.side = 48;
  EXPECT_THROW(prepare_cache(o), std::runtime_error);  // 11% bad > 1%
  EXPECT_FALSE(fs::exists(o.to));
  EXPECT_FALSE(fs::exists(o.to + ".tmp"));
  o.max_bad_share = 0.2;
  const PrepareReport rep = prepare_cache(o);
  EXPECT_EQ(rep.written, 8);
  EXPECT_NE(rep.bad.find("1 of 9 images bad"), std::string::npos) << rep.bad;
  {
    CacheFile cf(o.to);
    cf.verify();
    EXPECT_EQ(cf.count(), 8u);
    EXPECT_EQ(cf.side(), 48);
    EXPECT_EQ(cf.classes(), (std::vector<std::string>{"a", "b"}));
    // Image 0 is a/img0.jpg: exactly the centre square of its full decode, resampled to 48.
    const auto bytes = read_bytes(dir / "data/a/img0.jpg");
    const Image full = decode_full(bytes.data(), bytes.size());
    std::vector<std::uint8_t> expect(48 * 48 * 3);
    resample(full, center_square(full.width, full.height), 48, 48, false, expect.data());
    EXPECT_EQ(std::vector<std::uint8_t>(cf.pixels(0), cf.pixels(0) + expect.size()), expect);
    EXPECT_EQ(cf.label(0), 0);
    EXPECT_EQ(cf.label(7), 1);
    const auto src = make_cache_source(o.to);
    std::vector<std::uint8_t> s(32 * 32 * 3);
    SampleRng rng(1, 0, 3);
    src->sample(3, rng, 32, s.data());
  }
  // Never overwritten without --force; with it, replaced.
  const auto before = fs::last_write_time(o.to);
  EXPECT_THROW_MSG(prepare_cache(o), UsageError, o.to + " already exists; pass --force to replace it (nothing was written)");
  EXPECT_EQ(fs::last_write_time(o.to), before);
  o.force = true;
  EXPECT_EQ(prepare_cache(o).written, 8);
  // Damage: a flipped pixel byte fails verify(); a truncated file and a foreign file fail to open.
  {
    std::fstream f(o.to, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-10, std::ios::end);
    f.put('\x7f');
  }
  EXPECT_THROW_MSG(CacheFile(o.to).verify(), std::runtime_error, o.to + ": checksum mismatch: the file is damaged");
  fs::resize_file(o.to, fs::file_size(o.to) - 100);
  try {
    CacheFile c(o.to);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("truncated or damaged cache"), std::string::npos) << e.what();
  }
  write(dir / "foreign.bin", std::vector<std::uint8_t>(200, 'x'));
  EXPECT_THROW_MSG(CacheFile(dir / "foreign.bin"), std::runtime_error,
                   dir / "foreign.bin" + ": not an autotune image cache (wrong magic); make one with autotune prepare-data");
}

TEST(Tokens, WindowsAreConsistentDeterministicAndErrorsNameTheFile) {
  TempDir dir;
  std::vector<std::uint16_t> toks(5000);
  for (size_t i = 0; i < toks.size(); ++i) toks[i] = static_cast<std::uint16_t>(i * 7 % 50257);
  {
    std::ofstream(dir / "t.bin", std::ios::binary)
        .write(reinterpret_cast<const char*>(toks.data()), static_cast<std::streamsize>(toks.size() * 2));
  }
  TokenFile tf(dir / "t.bin", 65);
  EXPECT_EQ(tf.size(), 5000u);
  std::vector<std::int64_t> x(4 * 64), y(x.size()), x2(x.size()), y2(x.size());
  tf.fill_batch(1, 10, 4, 64, x.data(), y.data());
  tf.fill_batch(1, 10, 4, 64, x2.data(), y2.data());
  EXPECT_EQ(x, x2);
  for (int b = 0; b < 4; ++b)
    for (int i = 0; i + 1 < 64; ++i) ASSERT_EQ(y[b * 64 + i], x[b * 64 + i + 1]);  // y is x shifted by one
  tf.fill_batch(1, 11, 4, 64, x2.data(), y2.data());
  EXPECT_NE(x, x2);
  write(dir / "odd.bin", {1, 2, 3});
  EXPECT_THROW_MSG(TokenFile(dir / "odd.bin", 2), std::runtime_error,
                   "token file " + dir / "odd.bin" + ": 3 bytes is not a whole number of uint16 tokens");
  EXPECT_THROW_MSG(TokenFile(dir / "t.bin", 6000), std::runtime_error,
                   "token file " + dir / "t.bin" + ": 5000 tokens, need at least 6000 (one window of T+1)");
  // Raw text given as a token file: refused with the command that makes one of it.
  std::string text;
  while (text.size() < 5000) text += "The quick brown fox jumps over the lazy dog.\n\tÉté, naïve café.\r\n";
  std::ofstream(dir / "raw.txt") << text;
  const std::string raw = dir / "raw.txt";
  EXPECT_THROW_MSG(TokenFile(raw, 2), std::runtime_error,
                   "token file " + raw + ": this is text, not uint16 tokens; make a token file of it with: autotune prepare-data "
                   "--tokens-from " + raw + " --to " + raw + ".tokens (then --data " + raw + ".tokens)");
}

TEST(Tokens, ByteLevelTokensFromTextEveryByteOneTokenFilesInSortedOrder) {
  TempDir dir;
  std::filesystem::create_directories(dir / "text/sub");
  std::ofstream(dir / "text/b.txt") << "hi";
  std::ofstream(dir / "text/sub/c.txt") << "\xff!";
  std::ofstream(dir / "a.txt") << "A";
  const ByteTokensReport r = write_byte_tokens({dir / "text", dir / "a.txt"}, dir / "t.bin", false);
  EXPECT_EQ(r.files, 3);
  EXPECT_EQ(r.tokens, 8);  // "A\n" then "hi\n" then "\xff!\n": paths sorted, a newline after each file
  const TokenFile tf(dir / "t.bin", 2);
  const std::vector<std::uint16_t> got(tf.tokens(), tf.tokens() + tf.size());
  EXPECT_EQ(got, (std::vector<std::uint16_t>{'A', 10, 'h', 'i', 10, 255, '!', 10}));
  EXPECT_EQ(tf.max_token(), 255);
  EXPECT_THROW_MSG(write_byte_tokens({dir / "a.txt"}, dir / "t.bin", false), autotune::UsageError,
                   "--to " + dir / "t.bin" + ": already exists; pass --force to replace it");
  EXPECT_THROW_MSG(write_byte_tokens({dir / "nope"}, dir / "u.bin", false), autotune::UsageError,
                   "--tokens-from " + dir / "nope" + ": no such file or folder");
}

TEST(Loader, OrderedAndIdenticalForAnyWorkerCount) {
  TempDir dir;
  make_folder(dir / "data", 5);
  const ImageFolder f = ImageFolder::scan(dir / "data");
  const auto src = make_folder_source(f, DecodeMode::jpeg_crop_scale);
  const auto order = epoch_order(f.files.size(), 5, 0);
  auto run = [&](int workers, int prefetch) {
    BadDataCounter bad;
    BatchLoader l(workers, prefetch, [&](std::uint64_t k, BatchSlot& s) {
      s.bytes.resize(3 * 40 * 40 * 3);
      s.ints.resize(3);
      fill_image_batch(*src, order, 5, 0, k * 3, 3, 40, s.bytes.data(), s.ints.data(), bad);
    });
    std::vector<std::vector<std::uint8_t>> got;
    for (int i = 0; i < 7; ++i) {
      const BatchSlot& s = l.next();
      EXPECT_EQ(s.index, static_cast<std::uint64_t>(i));
      got.push_back(s.bytes);
    }
    return got;
  };
  const auto ref = run(0, 1);
  EXPECT_EQ(run(1, 2), ref);
  EXPECT_EQ(run(2, 1), ref);
  EXPECT_EQ(run(3, 4), ref);
}

TEST(Loader, EarlyStopDoesNotHangAndWorkerErrorsSurfaceInOrder) {
  {
    const auto t0 = std::chrono::steady_clock::now();
    {
      BatchLoader l(2, 2, [](std::uint64_t, BatchSlot& s) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        s.ints.assign(1, 1);
      });
      l.next();
    }  // destroyed with batches in flight
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  }
  BatchLoader l(2, 2, [](std::uint64_t k, BatchSlot& s) {
    if (k == 3) throw std::runtime_error("decoding /data/b/x.jpg failed: boom");
    s.ints.assign(1, static_cast<std::int64_t>(k));
  });
  for (int i = 0; i < 3; ++i) EXPECT_EQ(l.next().ints[0], i);
  EXPECT_THROW_MSG(l.next(), std::runtime_error, "decoding /data/b/x.jpg failed: boom");
  EXPECT_EQ(l.next().ints[0], 4);  // the loader goes on
  EXPECT_GE(l.wait_seconds(), 0.0);
}

}  // namespace
}  // namespace autotune::data
