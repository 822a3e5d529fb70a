#include "data/tokens.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "data/augment.h"

namespace autotune::data {

TokenFile::TokenFile(const std::string& path, std::size_t min_tokens) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(fmt::format("token file {}: cannot open: {}", path, std::strerror(errno)));
  struct stat st {};
  ::fstat(fd, &st);
  bytes_ = static_cast<std::size_t>(st.st_size);
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
