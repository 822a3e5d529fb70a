#pragma once
// Reading another process's files under /proc (its stat, its cmdline) while it may be exiting.
#include <optional>
#include <string>

namespace autotune {

/// All that `fd` reads from its position to the end, by read(2); nothing when a read fails. A process that exits and is
/// reaped between a /proc file's open and its read fails the read with ESRCH. libstdc++'s filebuf throws that out of an
/// istreambuf_iterator, so iostreams are not for these files.
std::optional<std::string> read_all(int fd);

/// The whole of `path` (for example /proc/PID/stat); nothing when it cannot be opened or read: the process has gone,
/// or never was. A zombie's cmdline reads as "".
std::optional<std::string> read_proc_file(const std::string& path);

}  // namespace autotune
