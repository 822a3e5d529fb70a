#pragma once
// Shared by the fuzz targets (tests/fuzz/): the parsers that read files get the input as a file.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace autotune::fuzz {

/// Writes `data` to a per-process file with `suffix` (the parsers pick YAML/JSON by content, not name)
/// and returns its path; the same path is reused for every input of the run.
inline std::string as_file(const std::uint8_t* data, std::size_t size, const char* suffix) {
  static const std::string path = [&] {
    std::string p = "/tmp/autotune-fuzz-" + std::to_string(::getpid()) + suffix;
    static std::string to_remove;
    to_remove = p;
    std::atexit([] { std::remove(to_remove.c_str()); });
    return p;
  }();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) __builtin_trap();
  if (size) std::fwrite(data, 1, size, f);
  std::fclose(f);
  return path;
}

}  // namespace autotune::fuzz
