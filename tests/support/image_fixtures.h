#pragma once
// Image-folder and cache fixtures for the data tests (CPU and GPU): textured JPEGs encoded with
// tjCompress2, and a pre-decoded cache made from them by prepare_cache.
#include <filesystem>
#include <fstream>
#include <string>

#include "data/cache_file.h"
#include "data/jpeg.h"

namespace autotune::testing {

/// ROOT/c0..c2/*.jpg: textured 96×72 images (plus `bad` zero-byte files in c0).
inline void make_image_folder(const std::string& root, int per_class, int bad = 0) {
  namespace fs = std::filesystem;
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < per_class; ++i) {
      data::Image img;
      img.width = 96;
      img.height = 72;
      img.rgb.resize(96 * 72 * 3);
      for (size_t p = 0; p < img.rgb.size(); ++p)
        img.rgb[p] = static_cast<std::uint8_t>((p * (7 + c) + i * 31 + (p / 288) * 5) & 255);
      const auto jpg = data::encode_jpeg(img, 90);
      fs::create_directories(root + "/c" + std::to_string(c));
      std::ofstream(root + "/c" + std::to_string(c) + "/" + std::to_string(i) + ".jpg", std::ios::binary)
          .write(reinterpret_cast<const char*>(jpg.data()), static_cast<std::streamsize>(jpg.size()));
    }
  for (int b = 0; b < bad; ++b) std::ofstream(root + "/c0/bad" + std::to_string(b) + ".jpg");
}

/// A folder of `per_class` × 3 images at ROOT/imgs and its cache of side `side` at ROOT/cache.bin.
inline std::string make_image_cache(const std::string& root, int per_class, int side) {
  make_image_folder(root + "/imgs", per_class);
  data::PrepareOptions po;
  po.from = root + "/imgs";
  po.to = root + "/cache.bin";
  po.side = side;
  data::prepare_cache(po);
  return po.to;
}

}  // namespace autotune::testing
