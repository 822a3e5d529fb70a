// An image folder of real handwritten digits for convergence runs on a CPU (docs/time-to-train.md): the UCI
// optical-digits set that Debian's python3-sklearn ships (sklearn/datasets/data/digits.csv.gz: 1,797 scans of
// 8×8, values 0–16, the class in the last column; scripts/fetch-test-images.sh keeps the file), each upscaled
// with the loader's own resampler to S×S grey on RGB and written as JPEG into OUT/<digit>/<n>.jpg — the
// ImageNet layout resnet18 --data reads.
//   gzip -dc digits.csv.gz | make_digits_folder OUT_DIR [S=32] [QUALITY=95]
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "data/augment.h"
#include "data/jpeg.h"

namespace fs = std::filesystem;
using namespace autotune::data;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: gzip -dc digits.csv.gz | make_digits_folder OUT_DIR [S=32] [QUALITY=95]\n";
    return 2;
  }
  const std::string out = argv[1];
  const int side = argc > 2 ? std::stoi(argv[2]) : 32, q = argc > 3 ? std::stoi(argv[3]) : 95;
  if (fs::exists(out)) {
    std::cerr << "make_digits_folder: " << out << " exists; remove it first (nothing is overwritten)\n";
    return 2;
  }
  std::string line;
  int n = 0, bad = 0;
  while (std::getline(std::cin, line)) {
    std::vector<int> v;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) {
      try {
        v.push_back(std::stoi(cell));
      } catch (const std::exception&) {
        v.clear();
        break;
      }
    }
    if (v.size() != 65 || v[64] < 0 || v[64] > 9) {  // 64 pixels and a class 0–9, else skipped and counted
      ++bad;
      continue;
    }
    Image small;
    small.width = small.height = 8;
    small.rgb.resize(8 * 8 * 3);
    for (int i = 0; i < 64; ++i)
      for (int c = 0; c < 3; ++c) small.rgb[static_cast<size_t>(3 * i + c)] = static_cast<std::uint8_t>(255 - 255 * std::min(v[static_cast<size_t>(i)], 16) / 16);
    Image img;
    img.width = img.height = side;
    img.rgb.resize(static_cast<size_t>(side) * side * 3);
    resample(small, {0, 0, 8, 8}, side, side, false, img.rgb.data());
    const auto jpg = encode_jpeg(img, q, /*subsamp444=*/true);
    const fs::path dir = fs::path(out) / std::to_string(v[64]);
    fs::create_directories(dir);
    std::ofstream(dir / (std::to_string(n) + ".jpg"), std::ios::binary)
        .write(reinterpret_cast<const char*>(jpg.data()), static_cast<std::streamsize>(jpg.size()));
    ++n;
  }
  std::cout << "wrote " << n << " digits of " << side << "x" << side << " into " << out << " (" << bad << " lines skipped)\n";
  return n > 0 ? 0 : 1;
}
