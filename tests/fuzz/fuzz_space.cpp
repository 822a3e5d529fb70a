// Fuzz target: the search-space file (`autotune tune --space FILE`, YAML or JSON). A bad file must be
// a UsageError naming the file and line, or another one-line std::exception; never a crash or a hang.
#include <cstdint>
#include <exception>

#include "tests/fuzz/fuzz_input.h"
#include "tuner/options/space_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = autotune::fuzz::as_file(data, size, ".yaml");
  try {
    const autotune::SpaceFile f = autotune::read_space_file(path);
    (void)f.space.grid_size();
  } catch (const std::exception&) {
  }
  return 0;
}
