#include "tuner/pricing/kept_beside.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "knobs/protocol.h"

namespace autotune {

namespace fs = std::filesystem;

std::string write_beside_run(const std::string& tune_dir, const std::string& stem, const std::string& text) {
  const fs::path path = fs::path(tune_dir) / (stem + ".json");
  if (fs::exists(path)) {  // keep the earlier one
    std::string date = "earlier";
    try {
      std::ifstream f(path);
      date = nlohmann::json::parse(f).value("date", date);
    } catch (const std::exception&) {
    }
    std::replace(date.begin(), date.end(), ':', '-');
    fs::path kept = fs::path(tune_dir) / fmt::format("{}-{}.json", stem, date);
    for (int k = 2; fs::exists(kept); ++k) kept = fs::path(tune_dir) / fmt::format("{}-{}-{}.json", stem, date, k);
    fs::rename(path, kept);
  }
  write_file_atomic(path.string(), text);
  return path.string();
}

}  // namespace autotune
