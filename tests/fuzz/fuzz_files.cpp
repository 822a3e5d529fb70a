// Fuzz target: the binary files autotune maps — the pre-decoded image cache (`prepare-data`) and a
// uint16 token file. Every field is checked before it is used: a damaged file is a one-line error.
#include <cstdint>
#include <exception>

#include "data/cache_file.h"
#include "data/tokens.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = autotune::fuzz::as_file(data, size, ".bin");
  try {
    autotune::data::CacheFile c(path);
    c.verify();
    for (std::size_t i = 0; i < c.count(); ++i) (void)c.label(i);
    if (c.count()) (void)c.pixels(c.count() - 1)[0];
  } catch (const std::exception&) {
  }
  try {
    autotune::data::TokenFile t(path, 9);
    (void)t.max_token();
    std::int64_t x[2 * 4], y[2 * 4];
    t.fill_batch(1, 2, 2, 4, x, y);
  } catch (const std::exception&) {
  }
  return 0;
}
