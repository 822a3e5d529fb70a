#include "tuner/exec/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "knobs/error.h"
#include "tuner/exec/subprocess.h"

namespace autotune {

RunLock::RunLock(const std::string& dir, const std::string& what)
    : path_((std::filesystem::path(dir) / ".autotune.lock").string()) {
  // O_CLOEXEC: a worker must not inherit the descriptor (flock belongs to the open file, so a worker
  // outliving the tuner would keep the folder locked).
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw UsageError(fmt::format("{}: cannot create the run lock: {}", path_, std::strerror(errno)));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[256] = {};
    const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK) throw UsageError(fmt::format("{}: cannot lock the run folder: {}", path_, std::strerror(err)));
    std::string holder = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string("unknown");
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    throw UsageError(
        fmt::format("{} is in use by another autotune run ({}); wait for it to finish or choose another --out", dir, holder));
  }
  const std::string me = fmt::format("autotune {}, pid {} on {}\n", what, ::getpid(), this_host());
  if (::ftruncate(fd_, 0) == 0 && ::pwrite(fd_, me.data(), me.size(), 0) < 0) {
    // The lock holds without the note; the message of a refused run then says "unknown".
  }
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock; the file stays (removing it would race a waiting run)
}

}  // namespace autotune
