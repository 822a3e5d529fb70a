#include "data/cache_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "knobs/error.h"

namespace autotune::data {

namespace fs = std::filesystem;

namespace {

constexpr std::uint32_t kHeaderSize = 72;

struct Header {
  char magic[8];
  std::uint32_t version, header_size;
  std::uint64_t count;
  std::uint32_t side, channels, num_classes, reserved;
  std::uint64_t names_offset, labels_offset, pixels_offset, checksum;
};
static_assert(sizeof(Header) == kHeaderSize, "cache header layout");

std::uint64_t fnv1a(const std::uint8_t* p, std::size_t n, std::uint64_t h = 0xcbf29ce484222325ULL) {
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::uint64_t align4k(std::uint64_t x) { return (x + 4095) & ~std::uint64_t{4095}; }

}  // namespace

namespace {

/// Every image of the folder decoded and resized to side × side, in parallel, in folder order; bad
/// files counted and left out (`ok[i]` = 0).
struct DecodedFolder {
  std::vector<std::vector<std::uint8_t>> pixels;
  std::vector<char> ok;
};
DecodedFolder decode_folder(const ImageFolder& folder, int side, int threads, BadDataCounter& bad) {
  const std::size_t n = folder.files.size(), per = static_cast<std::size_t>(side) * side * 3;
  DecodedFolder d{std::vector<std::vector<std::uint8_t>>(n), std::vector<char>(n, 0)};
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        const auto bytes = read_bytes(folder.files[i]);
        const Image img = decode_full(bytes.data(), bytes.size());
        d.pixels[i].resize(per);
        resample(img, center_square(img.width, img.height), side, side, false, d.pixels[i].data());
        d.ok[i] = 1;
        bad.add_ok();
      } catch (const DecodeError& e) {
        bad.add(e.reason, folder.files[i], e.what());
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return d;
}

/// The file's parts before the pixels: header (with the checksum of everything after it), class
/// names, labels, and the zero padding that aligns the pixels to 4 KiB.
struct CacheLayout {
  Header h{};
  std::string names;
  std::vector<std::int32_t> labels;
  std::vector<std::uint8_t> pad;
};
CacheLayout lay_out(const ImageFolder& folder, const DecodedFolder& d, int side) {
  CacheLayout l;
  for (const auto& c : folder.classes) {
    const auto len = static_cast<std::uint32_t>(c.size());
    l.names.append(reinterpret_cast<const char*>(&len), 4);
    l.names += c;
  }
  for (std::size_t i = 0; i < d.ok.size(); ++i)
    if (d.ok[i]) l.labels.push_back(folder.labels[i]);
  Header& h = l.h;
  std::memcpy(h.magic, kCacheMagic, 8);
  h.version = kCacheVersion;
  h.header_size = kHeaderSize;
  h.count = l.labels.size();
  h.side = static_cast<std::uint32_t>(side);
  h.channels = 3;
  h.num_classes = static_cast<std::uint32_t>(folder.classes.size());
  h.names_offset = kHeaderSize;
  h.labels_offset = h.names_offset + l.names.size();
  h.pixels_offset = align4k(h.labels_offset + l.labels.size() * 4);
  l.pad.assign(h.pixels_offset - (h.labels_offset + l.labels.size() * 4), 0);
  // Checksum over everything after the header, in file order (zero padding included).
  std::uint64_t sum = fnv1a(reinterpret_cast<const std::uint8_t*>(l.names.data()), l.names.size());
  sum = fnv1a(reinterpret_cast<const std::uint8_t*>(l.labels.data()), l.labels.size() * 4, sum);
  sum = fnv1a(l.pad.data(), l.pad.size(), sum);
  for (std::size_t i = 0; i < d.ok.size(); ++i)
    if (d.ok[i]) sum = fnv1a(d.pixels[i].data(), d.pixels[i].size(), sum);
  h.checksum = sum;
  return l;
}

/// Writes the cache to `to` through a temporary file that is verified before the rename: `to` is
/// either the complete, checked cache or untouched.
void write_verified(const std::string& to, const CacheLayout& l, const DecodedFolder& d) {
  const std::string tmp = to + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)));
    out.write(reinterpret_cast<const char*>(&l.h), sizeof l.h);
    out.write(l.names.data(), static_cast<std::streamsize>(l.names.size()));
    out.write(reinterpret_cast<const char*>(l.labels.data()), static_cast<std::streamsize>(l.labels.size() * 4));
    out.write(reinterpret_cast<const char*>(l.pad.data()), static_cast<std::streamsize>(l.pad.size()));
    for (std::size_t i = 0; i < d.ok.size(); ++i)
      if (d.ok[i]) out.write(reinterpret_cast<const char*>(d.pixels[i].data()), static_cast<std::streamsize>(d.pixels[i].size()));
    out.flush();
    if (!out) {
      fs::remove(tmp);
      throw std::runtime_error(fmt::format("writing {} failed (disk full?)", tmp));
    }
  }
  try {
    CacheFile(tmp).verify();
  } catch (...) {
    fs::remove(tmp);
    throw;
  }
  fs::rename(tmp, to);
}

}  // namespace

PrepareReport prepare_cache(const PrepareOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  if (o.side < 8 || o.side > 4096) throw UsageError(fmt::format("--size {} is out of range; allowed: 8..4096", o.side));
  if (fs::exists(o.to) && !o.force)
    throw UsageError(fmt::format("{} already exists; pass --force to replace it (nothing was written)", o.to));
  if (fs::exists(o.to) && fs::is_directory(o.to))
    throw UsageError(fmt::format("{} is a folder; --to names the cache file", o.to));
  const ImageFolder folder = ImageFolder::scan(o.from);
  BadDataCounter bad;
  const int threads = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  const DecodedFolder decoded = decode_folder(folder, o.side, threads, bad);
  bad.check(o.max_bad_share);
  const CacheLayout layout = lay_out(folder, decoded, o.side);
  write_verified(o.to, layout, decoded);
  PrepareReport r;
  r.written = static_cast<std::int64_t>(layout.h.count);
  r.bytes = static_cast<std::int64_t>(fs::file_size(o.to));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.bad = bad.describe();
  return r;
}

CacheFile::CacheFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  struct stat st {};
  ::fstat(fd, &st);
  map_size_ = static_cast<std::size_t>(st.st_size);
  if (map_size_ < kHeaderSize) {
    ::close(fd);
    throw std::runtime_error(fmt::format("{}: not an autotune image cache (only {} bytes)", path, map_size_));
  }
  map_ = ::mmap(nullptr, map_size_, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw std::runtime_error(fmt::format("{}: mmap failed: {}", path, std::strerror(errno)));
  }
  auto fail = [&](const std::string& why) {
    ::munmap(map_, map_size_);
    map_ = nullptr;
    throw std::runtime_error(fmt::format("{}: {}", path, why));
  };
  Header h;
  std::memcpy(&h, map_, sizeof h);
  if (std::memcmp(h.magic, kCacheMagic, 8) != 0)
    fail("not an autotune image cache (wrong magic); make one with autotune prepare-data");
  if (h.version != kCacheVersion)
    fail(fmt::format("cache format version {} is not supported; this build reads version {}", h.version, kCacheVersion));
  const std::uint64_t per = static_cast<std::uint64_t>(h.side) * h.side * h.channels;
  const std::uint64_t expect = h.pixels_offset + h.count * per;
  if (h.channels != 3 || h.side == 0 || h.side > 65536 || h.names_offset < kHeaderSize || h.labels_offset > h.pixels_offset ||
      h.names_offset > h.labels_offset || h.pixels_offset > map_size_)
    fail("corrupt header");
  // Every offset and size is checked against the file before anything is read through it; products
  // are checked for overflow first (a crafted count could wrap the size the header promises).
  if (h.count > (map_size_ - h.pixels_offset) / per)
    fail(fmt::format("truncated or damaged cache: {} bytes hold fewer than the {} images of {}×{} the header promises", map_size_,
                     h.count, h.side, h.side));
  if (h.count > (h.pixels_offset - h.labels_offset) / 4) fail("corrupt label table");
  if (map_size_ != expect)
    fail(fmt::format("truncated or damaged cache: {} bytes, the header promises {} ({} images of {}×{})", map_size_, expect,
                     h.count, h.side, h.side));
  count_ = h.count;
  side_ = static_cast<int>(h.side);
  checksum_ = h.checksum;
  const auto* base = static_cast<const std::uint8_t*>(map_);
  std::uint64_t p = h.names_offset;
  for (std::uint32_t c = 0; c < h.num_classes; ++c) {
    if (p + 4 > h.labels_offset) fail("corrupt class-name table");
    std::uint32_t len;
    std::memcpy(&len, base + p, 4);
    if (p + 4 + len > h.labels_offset) fail("corrupt class-name table");
    classes_.emplace_back(reinterpret_cast<const char*>(base + p + 4), len);
    p += 4 + len;
  }
  labels_ = base + h.labels_offset;
  pixels_ = base + h.pixels_offset;
  for (std::size_t i = 0; i < count_; ++i)  // a label is a class index: it must name one of the classes
    if (const std::int32_t l = label(i); l < 0 || static_cast<std::uint32_t>(l) >= h.num_classes)
      fail(fmt::format("corrupt label table: image {} has class {} of {}", i, l, h.num_classes));
  ::madvise(map_, map_size_, MADV_RANDOM);
}

CacheFile::~CacheFile() {
  if (map_) ::munmap(map_, map_size_);
}

void CacheFile::verify() const {
  const auto* base = static_cast<const std::uint8_t*>(map_);
  if (fnv1a(base + kHeaderSize, map_size_ - kHeaderSize) != checksum_)
    throw std::runtime_error(fmt::format("{}: checksum mismatch: the file is damaged", path_));
}

namespace {

class CacheSource : public ImageSource {
 public:
  explicit CacheSource(const std::string& path) : f_(path) {}
  std::size_t size() const override { return f_.count(); }
  std::int32_t label(std::size_t i) const override { return f_.label(i); }
  std::string name(std::size_t i) const override { return fmt::format("{}[{}]", f_.path(), i); }
  int num_classes() const override { return static_cast<int>(f_.classes().size()); }
  void sample(std::size_t i, SampleRng& rng, int out, std::uint8_t* dst) const override {
    const CropParams p = random_resized_crop(f_.side(), f_.side(), rng);
    // Straight from the mapping (no copy): resample reads only the rows the crop needs.
    resample(f_.pixels(i), f_.side(), f_.side(), p.window, out, out, p.flip, dst);
  }
  int raw_side() const override { return f_.side(); }
  CropParams raw_sample(std::size_t i, SampleRng& rng, std::uint8_t* dst) const override {
    const CropParams p = random_resized_crop(f_.side(), f_.side(), rng);  // the same draw as sample()
    std::memcpy(dst, f_.pixels(i), static_cast<std::size_t>(f_.side()) * f_.side() * 3);
    return p;
  }

 private:
  CacheFile f_;
};

}  // namespace

std::unique_ptr<ImageSource> make_cache_source(const std::string& path) { return std::make_unique<CacheSource>(path); }

}  // namespace autotune::data
