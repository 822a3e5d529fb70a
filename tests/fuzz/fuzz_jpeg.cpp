// Fuzz target: the JPEG path of the input pipeline — header, full decode, and the RandomResizedCrop
// region decode with DCT scaling (window and scale taken from the input's first bytes).
#include <cstdint>
#include <exception>

#include "data/jpeg.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 6) return 0;
  const int x = data[0], y = data[1], w = 1 + data[2], h = 1 + data[3], denom = 1 << (data[4] % 4);
  const std::uint8_t* jpeg = data + 5;
  const std::size_t n = size - 5;
  try {
    const auto hdr = autotune::data::read_header(jpeg, n);
    (void)hdr;
    (void)autotune::data::decode_region(jpeg, n, autotune::data::Rect{double(x), double(y), double(w), double(h)}, denom);
  } catch (const std::exception&) {
  }
  try {
    (void)autotune::data::decode_full(jpeg, n);
  } catch (const std::exception&) {
  }
  return 0;
}
