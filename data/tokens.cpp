#include "data/tokens.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "data/augment.h"
#include "knobs/error.h"

namespace autotune::data {

namespace {

/// Whether the file's first 4 KiB read as text: printable ASCII, tabs, newlines and well-formed UTF-8 (a sequence cut
/// at the 4-KiB edge aside). A uint16 token file holds every token below 256 with a zero high byte, and low bytes of
/// every value: 2,048 tokens that make neither a control byte nor broken UTF-8 do not happen in real token data.
bool looks_like_text(int fd) {
  unsigned char buf[4096];
  const ssize_t got = ::pread(fd, buf, sizeof buf, 0);
  if (got < 16) return false;
  const std::size_t n = static_cast<std::size_t>(got);
  for (std::size_t i = 0; i < n;) {
    const unsigned char b = buf[i];
    if (b < 0x80) {
      if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7f) return false;
      ++i;
      continue;
    }
    const std::size_t len = b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
    if (len == 0) return false;  // a continuation byte first, an overlong lead or a byte UTF-8 never uses (0xF5–0xFF)
    for (std::size_t k = 1; k < len; ++k)
      if (i + k < n && (buf[i + k] & 0xC0) != 0x80) return false;
    i += len;
  }
  return true;
}

}  // namespace

TokenFile::TokenFile(const std::string& path, std::size_t min_tokens) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(fmt::format("token file {}: cannot open: {}", path, std::strerror(errno)));
  struct stat st {};
  ::fstat(fd, &st);
  bytes_ = static_cast<std::size_t>(st.st_size);
  if (looks_like_text(fd)) {
    ::close(fd);
    throw std::runtime_error(fmt::format("token file {}: this is text, not uint16 tokens; make a token file of it with: autotune "
                                         "prepare-data --tokens-from {} --to {}.tokens (then --data {}.tokens)",
                                         path, path, path, path));
  }
  if (bytes_ % 2) {
    ::close(fd);
    throw std::runtime_error(fmt::format("token file {}: {} bytes is not a whole number of uint16 tokens", path, bytes_));
  }
  n_ = bytes_ / 2;
  if (n_ < min_tokens) {
    ::close(fd);
    throw std::runtime_error(fmt::format("token file {}: {} tokens, need at least {} (one window of T+1)", path, n_, min_tokens));
  }
  map_ = ::mmap(nullptr, bytes_, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw std::runtime_error(fmt::format("token file {}: mmap failed: {}", path, std::strerror(errno)));
  }
  tokens_ = static_cast<const std::uint16_t*>(map_);
}

TokenFile::~TokenFile() {
  if (map_) ::munmap(map_, bytes_);
}

ByteTokensReport write_byte_tokens(const std::vector<std::string>& sources, const std::string& to, bool force) {
  namespace fs = std::filesystem;
  if (!force && fs::exists(to)) throw UsageError(fmt::format("--to {}: already exists; pass --force to replace it", to));
  std::vector<fs::path> files;
  for (const auto& s : sources) {
    std::error_code ec;
    if (fs::is_regular_file(s, ec)) {
      files.emplace_back(s);
    } else if (fs::is_directory(s, ec)) {
      for (const auto& e : fs::recursive_directory_iterator(s, fs::directory_options::skip_permission_denied, ec))
        if (e.is_regular_file(ec)) files.push_back(e.path());
    } else {
      throw UsageError(fmt::format("--tokens-from {}: no such file or folder", s));
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<std::uint16_t> tokens;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) continue;  // unreadable: skipped
    for (std::istreambuf_iterator<char> it(in), end; it != end; ++it) tokens.push_back(static_cast<unsigned char>(*it));
    tokens.push_back(10);
  }
  if (files.empty() || tokens.size() <= files.size())
    throw UsageError(fmt::format("--tokens-from: {} file(s) with no bytes to read; nothing written", files.size()));
  const std::string tmp = to + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(tokens.data()), static_cast<std::streamsize>(tokens.size() * sizeof(std::uint16_t)));
    if (!out) throw std::runtime_error(fmt::format("{}: cannot write the token file", tmp));
  }
  fs::rename(tmp, to);
  return {static_cast<std::int64_t>(files.size()), static_cast<std::int64_t>(tokens.size())};
}

std::uint16_t TokenFile::max_token() const { return n_ ? *std::max_element(tokens_, tokens_ + n_) : 0; }

void TokenFile::fill_batch(std::uint64_t seed, std::uint64_t step, int batch, int t, std::int64_t* x, std::int64_t* y,
                           std::uint64_t first_sample) const {
  const std::uint64_t starts = n_ - static_cast<std::size_t>(t);  // windows of t+1 tokens: start ≤ n − t − 1
  for (int b = 0; b < batch; ++b) {
    SampleRng rng(seed, step, first_sample + static_cast<std::uint64_t>(b));
    const std::size_t s = rng.below(starts);
    for (int i = 0; i < t; ++i) {
      x[static_cast<std::size_t>(b) * t + i] = tokens_[s + i];
      y[static_cast<std::size_t>(b) * t + i] = tokens_[s + i + 1];
    }
  }
}

}  // namespace autotune::data
