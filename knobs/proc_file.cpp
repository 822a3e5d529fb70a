#include "knobs/proc_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace autotune {

std::optional<std::string> read_all(int fd) {
  std::string text;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return text;
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::nullopt;
    }
    text.append(buf, static_cast<std::size_t>(n));
  }
}

std::optional<std::string> read_proc_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> text = read_all(fd);
  ::close(fd);
  return text;
}

}  // namespace autotune
