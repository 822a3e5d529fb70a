#include "data/image_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <stdexcept>

#include "knobs/error.h"

namespace autotune::data {

namespace fs = std::filesystem;

std::string to_string(DecodeMode m) {
  switch (m) {
    case DecodeMode::jpeg_full:
      return "jpeg_full";
    case DecodeMode::jpeg_crop_scale:
      return "jpeg_crop_scale";
    case DecodeMode::cache:
      return "cache";
  }
  return "jpeg_full";
}

DecodeMode decode_mode_from_string(const std::string& s) {
  for (auto m : {DecodeMode::jpeg_full, DecodeMode::jpeg_crop_scale, DecodeMode::cache})
    if (to_string(m) == s) return m;
  throw UsageError(fmt::format("decode mode '{}' is not known; allowed: jpeg_full, jpeg_crop_scale, cache", s));
}

namespace {

bool is_jpeg_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".jpg" || ext == ".jpeg";
}

}  // namespace

ImageFolder ImageFolder::scan(const std::string& root) {
  std::error_code ec;
  if (!fs::exists(root, ec)) throw UsageError(fmt::format("image folder {} does not exist", root));
  if (!fs::is_directory(root, ec))
    throw UsageError(fmt::format("{} is not a folder; expected an image folder with one sub-folder per class", root));
  ImageFolder f;
  f.root = root;
  for (const auto& e : fs::directory_iterator(root, ec))
    if (e.is_directory()) f.classes.push_back(e.path().filename().string());
  if (ec) throw UsageError(fmt::format("cannot list {}: {}", root, ec.message()));
  std::sort(f.classes.begin(), f.classes.end());
  if (f.classes.empty()) {
    bool any_file = false;
    for (const auto& e : fs::directory_iterator(root, ec)) any_file |= e.is_regular_file();
    throw UsageError(fmt::format("{} has no class sub-folders{}; expected ImageNet layout: ROOT/<class>/<image>.jpg", root,
                                 any_file ? " (only loose files)" : " (it is empty)"));
  }
  for (std::size_t c = 0; c < f.classes.size(); ++c) {
    std::vector<std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(fs::path(root) / f.classes[c], ec))
      if (e.is_regular_file() && is_jpeg_name(e.path())) files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    for (auto& p : files) {
      f.files.push_back(std::move(p));
      f.labels.push_back(static_cast<std::int32_t>(c));
    }
  }
  if (f.files.empty())
    throw UsageError(fmt::format("{} has {} class sub-folders but no .jpg/.jpeg files in them", root, f.classes.size()));
  return f;
}

void BadDataCounter::add(BadReason r, const std::string& file, const std::string& what) {
  std::lock_guard<std::mutex> l(mu_);
  ++bad_[to_string(r)];
  if (examples_.size() < 5) examples_.push_back(file + ": " + what);
}
void BadDataCounter::add_ok() {
  std::lock_guard<std::mutex> l(mu_);
  ++ok_;
}
std::int64_t BadDataCounter::ok() const {
  std::lock_guard<std::mutex> l(mu_);
  return ok_;
}
std::int64_t BadDataCounter::bad() const {
  std::lock_guard<std::mutex> l(mu_);
  std::int64_t n = 0;
  for (const auto& [k, v] : bad_) n += v;
  return n;
}
std::map<std::string, std::int64_t> BadDataCounter::by_reason() const {
  std::lock_guard<std::mutex> l(mu_);
  return bad_;
}
std::vector<std::string> BadDataCounter::examples() const {
  std::lock_guard<std::mutex> l(mu_);
  return examples_;
}
std::string BadDataCounter::describe() const {
  const std::int64_t b = bad(), total = ok() + b;
  std::string parts;
  for (const auto& [k, v] : by_reason()) parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", k, v);
  std::string s = fmt::format("{} of {} images bad ({:.2f}%)", b, total, total ? 100.0 * b / total : 0.0);
  if (!parts.empty()) s += ": " + parts;
  const auto ex = examples();
  if (!ex.empty()) s += "; e.g. " + ex.front();
  return s;
}
void BadDataCounter::check(double max_share) const {
  const std::int64_t b = bad(), total = ok() + b;
  if (total > 0 && static_cast<double>(b) / total > max_share)
    throw std::runtime_error(fmt::format("too much bad data: {} — more than the allowed {:g}%", describe(), 100 * max_share));
}

namespace {

class FolderSource : public ImageSource {
 public:
  FolderSource(ImageFolder f, DecodeMode m) : f_(std::move(f)), mode_(m) {}
  std::size_t size() const override { return f_.files.size(); }
  std::int32_t label(std::size_t i) const override { return f_.labels[i]; }
  std::string name(std::size_t i) const override { return f_.files[i]; }
  int num_classes() const override { return static_cast<int>(f_.classes.size()); }

  void sample(std::size_t i, SampleRng& rng, int out, std::uint8_t* dst) const override {
    thread_local std::vector<std::uint8_t> bytes;  // one file buffer per loader thread, reused
    const std::size_t size = read_bytes(f_.files[i], bytes);
    if (mode_ == DecodeMode::jpeg_full) {
      const Image img = decode_full(bytes.data(), size);
      const CropParams p = random_resized_crop(img.width, img.height, rng);
      resample(img, p.window, out, out, p.flip, dst);
    } else {
      const JpegHeader hd = read_header(bytes.data(), size);
      const CropParams p = random_resized_crop(hd.width, hd.height, rng);
      const int denom = choose_scale_denom(p.window.w, p.window.h, out, out);
      thread_local RegionImage r;  // one pixel buffer per loader thread, reused
      decode_region(bytes.data(), size, p.window, denom, r);
      resample(r.image, r.window_in_image, out, out, p.flip, dst);
    }
  }

 private:
  ImageFolder f_;
  DecodeMode mode_;
};

}  // namespace

std::unique_ptr<ImageSource> make_folder_source(const ImageFolder& folder, DecodeMode mode) {
  if (mode == DecodeMode::cache) throw UsageError("decode=cache reads a cache file (autotune prepare-data), not an image folder");
  return std::make_unique<FolderSource>(folder, mode);
}

std::vector<std::uint32_t> epoch_order(std::size_t n, std::uint64_t seed, std::uint64_t epoch) {
  std::vector<std::uint32_t> o(n);
  std::iota(o.begin(), o.end(), 0u);
  SampleRng rng(seed, epoch, 0xFFFFFFFFull);
  for (std::size_t i = n; i > 1; --i) std::swap(o[i - 1], o[rng.below(i)]);
  return o;
}

CropParams ImageSource::raw_sample(std::size_t i, SampleRng&, std::uint8_t*) const {
  throw std::logic_error(fmt::format("{}: this source has no fixed-size raw form (only the pre-decoded cache has)", name(i)));
}

namespace {
/// The batch loop shared by the CPU and raw forms: a bad file is replaced by the next in order, so
/// every batch stays full and deterministic.
template <typename PerSample>
void fill_batch(const ImageSource& src, const std::vector<std::uint32_t>& order, std::uint64_t seed, std::uint64_t epoch,
                std::uint64_t first, int n, std::int64_t* labels, BadDataCounter& bad, PerSample&& per_sample) {
  const std::size_t total = order.size();
  for (int b = 0; b < n; ++b) {
    for (std::size_t k = 0;; ++k) {
      if (k >= std::min<std::size_t>(total, 64))
        throw std::runtime_error(fmt::format("no decodable image among {} consecutive files: {}", k, bad.describe()));
      const std::uint32_t idx = order[(first + b + k) % total];
      SampleRng rng(seed, epoch, idx);
      try {
        per_sample(b, idx, rng);
        labels[b] = src.label(idx);
        bad.add_ok();
        break;
      } catch (const DecodeError& e) {
        bad.add(e.reason, src.name(idx), e.what());
      }
    }
  }
}
}  // namespace

void fill_image_batch(const ImageSource& src, const std::vector<std::uint32_t>& order, std::uint64_t seed, std::uint64_t epoch,
                      std::uint64_t first, int n, int out_size, std::uint8_t* pixels, std::int64_t* labels, BadDataCounter& bad) {
  const std::size_t per = static_cast<std::size_t>(out_size) * out_size * 3;
  fill_batch(src, order, seed, epoch, first, n, labels, bad,
             [&](int b, std::uint32_t idx, SampleRng& rng) { src.sample(idx, rng, out_size, pixels + per * b); });
}

void fill_raw_batch(const ImageSource& src, const std::vector<std::uint32_t>& order, std::uint64_t seed, std::uint64_t epoch,
                    std::uint64_t first, int n, std::uint8_t* pixels, std::int64_t* labels, float* crops, BadDataCounter& bad) {
  const std::size_t per = static_cast<std::size_t>(src.raw_side()) * src.raw_side() * 3;
  fill_batch(src, order, seed, epoch, first, n, labels, bad, [&](int b, std::uint32_t idx, SampleRng& rng) {
    const CropParams p = src.raw_sample(idx, rng, pixels + per * b);
    float* c = crops + 5 * b;
    c[0] = static_cast<float>(p.window.x);
    c[1] = static_cast<float>(p.window.y);
    c[2] = static_cast<float>(p.window.w);
    c[3] = static_cast<float>(p.window.h);
    c[4] = p.flip ? 1.0f : 0.0f;
  });
}

}  // namespace autotune::data
