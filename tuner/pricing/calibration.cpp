#include "tuner/pricing/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "knobs/numbers.h"
#include "knobs/protocol.h"
#include "tuner/pricing/kept_beside.h"

namespace autotune {

namespace fs = std::filesystem;
using nlohmann::json;

std::optional<Calibration> calibration_from(const ConvergeSummary& s, const std::string& model) {
  Calibration c;
  double log_sum = 0;
  for (const auto& cmp : s.comparisons)
    if (cmp.implied_noise_scale > 0 && std::isfinite(cmp.implied_noise_scale)) {
      c.arms.push_back({s.runs[static_cast<size_t>(cmp.run)].global_batch, cmp.implied_noise_scale});
      log_sum += std::log(cmp.implied_noise_scale);
    }
  if (c.arms.empty()) return std::nullopt;
  c.noise_scale = std::exp(log_sum / static_cast<double>(c.arms.size()));
  c.lo = c.hi = c.arms.front().implied;
  for (const auto& a : c.arms) {
    c.lo = std::min(c.lo, a.implied);
    c.hi = std::max(c.hi, a.implied);
  }
  c.converge_run = fs::absolute(s.out_dir).lexically_normal().string();
  c.date = s.finished_at;
  c.workload = s.workload.name;
  c.model = model;
  c.data = s.data;
  c.user_batch = s.user_batch;
  return c;
}

namespace {

json to_json(const Calibration& c) {
  json arms = json::array();
  for (const auto& a : c.arms) arms.push_back({{"global_batch", a.global_batch}, {"implied_noise_scale", a.implied}});
  return {{"schema", "autotune.calibration/1"}, {"noise_scale", c.noise_scale}, {"range", {c.lo, c.hi}}, {"arms", arms},
          {"converge_run", c.converge_run}, {"date", c.date}, {"workload", c.workload}, {"model", c.model},
          {"data", c.data}, {"user_batch", c.user_batch}};
}

}  // namespace

std::string write_calibration(const std::string& tune_dir, const Calibration& c) {
  return write_beside_run(tune_dir, "calibration", to_json(c).dump(2) + "\n");
}

std::optional<Calibration> read_calibration(const std::string& tune_dir, const std::string& workload, const std::string& model,
                                            const std::string& data, std::int64_t user_batch, std::string& refused) {
  refused.clear();
  const fs::path path = fs::path(tune_dir) / "calibration.json";
  if (tune_dir.empty() || !fs::exists(path)) return std::nullopt;
  Calibration c;
  try {
    std::ifstream f(path);
    const json j = json::parse(f);
    c.noise_scale = j.at("noise_scale").get<double>();
    c.lo = j.at("range").at(0).get<double>();
    c.hi = j.at("range").at(1).get<double>();
    for (const auto& a : j.at("arms")) c.arms.push_back({a.at("global_batch").get<std::int64_t>(), a.at("implied_noise_scale").get<double>()});
    c.converge_run = j.value("converge_run", "");
    c.date = j.value("date", "");
    c.workload = j.value("workload", "");
    c.model = j.value("model", "");
    c.data = j.value("data", "");
    c.user_batch = j.value("user_batch", std::int64_t{0});
  } catch (const std::exception& e) {
    refused = fmt::format("{} is unreadable ({}); the run's own noise scale prices it", path.string(), e.what());
    return std::nullopt;
  }
  const auto same_path = [](const std::string& a, const std::string& b) {
    return a == b || (!a.empty() && !b.empty() && fs::weakly_canonical(a) == fs::weakly_canonical(b));
  };
  std::string what;
  if (c.workload != workload || c.model != model)
    what = fmt::format("model {}", c.model.empty() ? c.workload : c.model);
  else if (!same_path(c.data, data))
    what = fmt::format("data {}", c.data);
  else if (c.user_batch != user_batch)
    what = fmt::format("a user batch of {}", c.user_batch);
  if (!what.empty()) {
    refused = fmt::format("calibration.json refused: it is from a converge run of {} (this run: {}, data {}, batch {}); the "
                          "run's own noise scale prices it",
                          what, model.empty() ? workload : model, data, user_batch);
    return std::nullopt;
  }
  if (!(c.noise_scale > 0) || !std::isfinite(c.noise_scale)) {
    refused = fmt::format("{} has no noise scale above 0; the run's own noise scale prices it", path.string());
    return std::nullopt;
  }
  return c;
}

void apply_calibration(NoiseScaleSummary& n, std::int64_t user_batch, const RunIdentity& id) {
  const auto c = read_calibration(id.dir, id.workload, id.model, id.data, user_batch, n.calibration_refused);
  if (!c) return;
  n.own_value = n.value;
  n.own_lo = n.lo;
  n.own_hi = n.hi;
  n.value = c->noise_scale;
  n.lo = c->lo;
  n.hi = c->hi;
  n.calibrated = true;
  std::string arms;
  for (const auto& a : c->arms)
    arms += fmt::format("{}batch {} implied {}", arms.empty() ? "" : "; ", a.global_batch, with_commas(a.implied));
  n.calibration_basis = fmt::format("converge run {}, finished {}: {}", c->converge_run, c->date, arms);
}

}  // namespace autotune
