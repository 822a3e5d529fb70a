#pragma once
#include <stdexcept>
#include <string>

namespace autotune {

/// Bad user input (flag, knob, value, config file). `what()` is one line naming the field, the bad
/// value and what is allowed; the CLI prints it and exits with status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The disk (or the file-size limit) ran out while writing `path`. Nothing half-written is left: the
/// file being written keeps its earlier content. A tune stops, keeps its journal and says how to resume;
/// a worker that hits it exits with kExitDiskFull so the tuner does not record a failed trial.
class DiskFull : public std::runtime_error {
 public:
  DiskFull(const std::string& path, const std::string& why)
      : std::runtime_error(path + ": " + why), path_(path), why_(why) {}
  const std::string& path() const { return path_; }
  const std::string& why() const { return why_; }

 private:
  std::string path_, why_;
};

/// A worker's exit status for DiskFull (sysexits' EX_TEMPFAIL: try again once there is room).
inline constexpr int kExitDiskFull = 75;

/// True for the errno values that mean "no room": ENOSPC, EDQUOT, EFBIG.
bool is_no_room(int err);

}  // namespace autotune
