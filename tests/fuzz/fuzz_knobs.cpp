// Fuzz target: `--set knob=value` and `--knobs knob=v1,v2` as the CLI parses them, one per input line.
#include <cstdint>
#include <exception>
#include <algorithm>
#include <string>

#include "knobs/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  autotune::KnobSpace space;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    try {
      space.add_assignment(line);
    } catch (const std::exception&) {
    }
    try {
      autotune::Config c;
      c.set_assignment(line);
      (void)c.key();
    } catch (const std::exception&) {
    }
    start = end + 1;
  }
  (void)space.grid_size();
  return 0;
}
