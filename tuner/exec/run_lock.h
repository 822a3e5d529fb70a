#pragma once
// One writer per run folder: a tune or check holds an exclusive lock on DIR/.autotune.lock for its
// whole life, so a second run on the same folder (a `--resume` started twice, a new run on a folder
// another run is still writing) is refused at once instead of interleaving trials in one journal.
#include <string>

namespace autotune {

class RunLock {
 public:
  /// Takes the lock on `dir` (which must exist) or throws UsageError naming the holder's pid and host.
  /// `what` names the command for the message ("tune", "check").
  RunLock(const std::string& dir, const std::string& what);
  ~RunLock();
  RunLock(RunLock&& o) noexcept : fd_(o.fd_), path_(std::move(o.path_)) { o.fd_ = -1; }
  RunLock& operator=(RunLock&&) = delete;
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace autotune
