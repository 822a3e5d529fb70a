// Builds an ImageNet-like benchmark folder from real photos: N JPEGs of W×H (default 500×375, q90,
// 4:2:0, baseline) in C class folders, each a different random crop of one of the photos, resized
// with the same antialiased resampler the loader uses and encoded with tjCompress2.
//   make_image_folder PHOTOS_DIR OUT_DIR [N=512] [CLASSES=8] [W=500] [H=375] [QUALITY=90]
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "data/augment.h"
#include "data/jpeg.h"

namespace fs = std::filesystem;
using namespace autotune::data;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: make_image_folder PHOTOS_DIR OUT_DIR [N=512] [CLASSES=8] [W=500] [H=375] [QUALITY=90]\n";
    return 2;
  }
  const std::string in = argv[1], out = argv[2];
  const int n = argc > 3 ? std::stoi(argv[3]) : 512, classes = argc > 4 ? std::stoi(argv[4]) : 8;
  const int w = argc > 5 ? std::stoi(argv[5]) : 500, h = argc > 6 ? std::stoi(argv[6]) : 375,
            q = argc > 7 ? std::stoi(argv[7]) : 90;
  if (fs::exists(out)) {
    std::cerr << "make_image_folder: " << out << " exists; remove it first (nothing is overwritten)\n";
    return 2;
  }
  std::vector<Image> photos;
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(in))
    if (e.path().extension() == ".jpg") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  for (const auto& p : paths) {
    const auto bytes = read_bytes(p.string());
    Image img = decode_full(bytes.data(), bytes.size());
    if (img.width > 2 * w && img.height > 2 * h) {  // keep memory and time small: pre-shrink very large photos
      const int sw = img.width / ((img.width / (2 * w)) > 0 ? img.width / (2 * w) : 1), sh = img.height * sw / img.width;
      Image s;
      s.width = sw;
      s.height = sh;
      s.rgb.resize(static_cast<size_t>(sw) * sh * 3);
      resample(img, {0, 0, static_cast<double>(img.width), static_cast<double>(img.height)}, sw, sh, false, s.rgb.data());
      img = std::move(s);
    }
    photos.push_back(std::move(img));
  }
  if (photos.empty()) {
    std::cerr << "make_image_folder: no .jpg photos in " << in << "\n";
    return 2;
  }
  std::size_t total = 0;
  for (int i = 0; i < n; ++i) {
    const Image& src = photos[static_cast<size_t>(i) % photos.size()];
    SampleRng rng(12345, 0, static_cast<std::uint64_t>(i));
    // A crop of 40–100% of the photo's width at the target aspect (never narrower than W when the photo
    // allows, so images are downscaled, keeping real-photo detail), so files differ like real photos do.
    const double frac = rng.uniform(std::max(0.4, std::min(1.0, static_cast<double>(w) / src.width)), 1.0);
    double cw = src.width * frac, ch = cw * h / w;
    if (ch > src.height) ch = src.height, cw = ch * w / h;
    const Rect r{rng.uniform(0, src.width - cw), rng.uniform(0, src.height - ch), cw, ch};
    Image img;
    img.width = w;
    img.height = h;
    img.rgb.resize(static_cast<size_t>(w) * h * 3);
    resample(src, r, w, h, (i / static_cast<int>(photos.size())) % 2 == 1, img.rgb.data());
    const auto jpg = encode_jpeg(img, q);
    const fs::path dir = fs::path(out) / ("class" + std::to_string(i % classes));
    fs::create_directories(dir);
    std::ofstream(dir / ("img" + std::to_string(i) + ".jpg"), std::ios::binary)
        .write(reinterpret_cast<const char*>(jpg.data()), static_cast<std::streamsize>(jpg.size()));
    total += jpg.size();
  }
  std::cout << "wrote " << n << " JPEGs of " << w << "x" << h << " q" << q << " (" << total / n / 1024 << " KiB on average) from "
            << photos.size() << " photos into " << out << "\n";
  return 0;
}
