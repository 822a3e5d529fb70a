// Fuzz target: plan.json and result.json as the worker and the tuner read them.
#include <cstdint>
#include <exception>

#include "knobs/protocol.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = autotune::fuzz::as_file(data, size, ".json");
  try {
    (void)autotune::read_result(path);
  } catch (const std::exception&) {
  }
  try {
    (void)autotune::read_plan(path);
  } catch (const std::exception&) {
  }
  return 0;
}
