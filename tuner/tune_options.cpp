#include "tuner/tune_options.h"

#include <fmt/format.h>

#include <cctype>
#include <filesystem>
#include <thread>
#include <nlohmann/json.hpp>

#include "knobs/error.h"
#include "knobs/knob.h"

namespace autotune {

namespace fs = std::filesystem;

namespace {

nlohmann::json space_to_json(const KnobSpace& s) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [k, vs] : s.axes()) j.push_back({{"knob", k}, {"values", vs}});
  return j;
}
KnobSpace space_from_json(const nlohmann::json& j) {
  KnobSpace s;
  for (const auto& a : j) s.add(a.at("knob").get<std::string>(), a.at("values").get<std::vector<std::string>>());
  return s;
}

}  // namespace

nlohmann::json options_to_json(const TuneOptions& o) {
  nlohmann::json j = o.setup;
  j["space"] = space_to_json(o.space);
  j["strategy"] = o.strategy.name;
  j["max_trials"] = o.strategy.max_trials;
  j["effective_batch"] = o.strategy.effective_batch;
  j["batch_values"] = o.strategy.batch_values;
  j["confirm_top"] = o.confirm_top;
  j["launcher"] = o.launcher;
  j["parallel"] = o.parallel;
  j["slot_cpus"] = o.slot_cpus;
  j["pin"] = o.pin;
  j["executor"] = o.executor;
  j["slurm_cpus"] = o.slurm_cpus;
  j["slurm_gpus"] = o.slurm_gpus;
  j["slurm_mem_mb"] = o.slurm_mem_mb;
  j["slurm_args"] = o.slurm_args;
  j["confirm_rounds"] = o.confirm_rounds;
  j["max_rel_iqr"] = o.stability.max_rel_iqr;
  j["max_drift"] = o.stability.max_drift;
  j["memory_headroom"] = o.stability.memory_headroom;
  j["max_remeasure"] = o.stability.max_remeasure;
  j["calibrate_noise"] = o.stability.calibrate;
  j["confirm_run_spread"] = o.stability.confirm_run_spread;
  j["confirm_round_lead"] = o.stability.confirm_round_lead;
  j["objective"] = o.objective;
  j["noise_burn_in"] = o.noise_burn_in;
  j["noise_scale"] = o.noise_scale;
  j["frontend"] = o.frontend;
  j["memory_model"] = o.memory_model;
  j["baseline_defaults"] = o.baseline_defaults;
  j["user_space"] = o.user_space;
  return j;
}

void options_from_json(const nlohmann::json& j, TuneOptions& o) {
  o.setup = j.get<TrialSetup>();
  o.space = space_from_json(j.at("space"));
  o.strategy.name = j.value("strategy", std::string("grid"));
  o.strategy.max_trials = j.value("max_trials", 0);
  o.strategy.effective_batch = j.value("effective_batch", std::int64_t{0});
  o.strategy.batch_values = j.value("batch_values", std::vector<std::int64_t>{});
  o.strategy.seed = o.setup.seed;
  o.confirm_top = j.value("confirm_top", 2);
  o.launcher = j.value("launcher", std::string("local"));
  o.parallel = j.value("parallel", 1);
  o.slot_cpus = j.value("slot_cpus", 0);
  o.pin = j.value("pin", true);
  o.executor = j.value("executor", std::string("local"));
  o.slurm_cpus = j.value("slurm_cpus", 0);
  o.slurm_gpus = j.value("slurm_gpus", -1);
  o.slurm_mem_mb = j.value("slurm_mem_mb", std::int64_t{0});
  o.slurm_args = j.value("slurm_args", std::vector<std::string>{});
  o.confirm_rounds = j.value("confirm_rounds", 2);
  o.stability.max_rel_iqr = j.at("max_rel_iqr");
  o.stability.max_drift = j.value("max_drift", o.stability.max_drift);
  o.stability.memory_headroom = j.at("memory_headroom");
  o.stability.max_remeasure = j.at("max_remeasure");
  // Journals from before the calibration existed resume (and report) with the fixed limits they ran with.
  o.stability.calibrate = j.value("calibrate_noise", false);
  // Likewise the confirmation's run-to-run allowance: an older run's report names the winner the run named.
  o.stability.confirm_run_spread = j.value("confirm_run_spread", false);
  o.stability.confirm_round_lead = j.value("confirm_round_lead", false);
  // Runs from before the time objective ranked by samples/s: their reports name the winner they named.
  o.objective = j.value("objective", std::string("throughput"));
  if (o.objective != "time" && o.objective != "throughput")
    throw UsageError(fmt::format("objective '{}' is not allowed; allowed: time, throughput", o.objective));
  o.strategy.other_batches = o.objective == "time";
  o.noise_burn_in = j.value("noise_burn_in", -1.0);
  o.noise_scale = j.value("noise_scale", 0.0);
  o.frontend = j.value("frontend", std::string("python"));
  o.memory_model = j.value("memory_model", std::string("on"));
  if (o.memory_model != "on" && o.memory_model != "off")
    throw UsageError(fmt::format("memory-model '{}' is not allowed; allowed: on, off", o.memory_model));
  o.baseline_defaults = j.value("baseline_defaults", std::string("catalog"));
  o.user_space = j.value("user_space", true);
  if (o.frontend != "python" && o.frontend != "libtorch")
    throw UsageError(fmt::format("frontend '{}' is not allowed; allowed: python, libtorch", o.frontend));
}

KnobSpace full_space(unsigned host_cpus) {
  if (host_cpus == 0) host_cpus = std::thread::hardware_concurrency();
  KnobSpace s;
  for (const auto& k : knob_catalog()) {
    std::vector<std::string> values = k.values;
    if (k.name == "num_workers")
      for (unsigned n = 8; n <= host_cpus / 2; n *= 2) values.push_back(std::to_string(n));
    s.add(k.name, values);
  }
  return s;
}

KnobSpace default_space() {
  KnobSpace s;
  s.add("batch_size", {"32", "64", "128", "256"});
  s.add("threads", {"1", "2"});
  return s;
}

double parse_duration(const std::string& text) {
  const std::string err = fmt::format("budget '{}' is not a duration; allowed: seconds or e.g. 90s, 10m, 1h30m", text);
  if (text.empty()) throw UsageError(err);
  double total = 0;
  size_t i = 0;
  bool any_unit = false;
  while (i < text.size()) {
    size_t j = i;
    while (j < text.size() && (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.')) ++j;
    if (j == i) throw UsageError(err);
    double v;
    try {
      v = std::stod(text.substr(i, j - i));
    } catch (const std::exception&) {
      throw UsageError(err);
    }
    if (j == text.size()) {
      if (any_unit) throw UsageError(err);  // "1m30" is ambiguous
      total += v;
      break;
    }
    const char u = text[j];
    total += u == 's' ? v : u == 'm' ? 60 * v : u == 'h' ? 3600 * v : throw UsageError(err);
    any_unit = true;
    i = j + 1;
  }
  if (total <= 0) throw UsageError(fmt::format("budget '{}' must be positive", text));
  return total;
}

std::string data_kind_for(const WorkloadInfo& w, const TrialSetup& setup) {
  const std::string &data = setup.data, &cache = setup.data_cache;
  if (data.empty()) {
    if (!cache.empty()) throw UsageError("--cache needs --data too (the folder the cache was prepared from)");
    return "";
  }
  std::error_code ec;
  if (!fs::exists(data, ec)) throw UsageError(fmt::format("--data {}: no such file or folder", data));
  if (w.image_data) {
    if (!fs::is_directory(data, ec))
      throw UsageError(fmt::format("--data {}: {} reads an image folder (ImageNet layout: DIR/<class>/<image>.jpg), not a file",
                                   data, w.name));
    if (!cache.empty() && !fs::is_regular_file(cache, ec))
      throw UsageError(
          fmt::format("--cache {}: no such file; make it with autotune prepare-data --from {} --to {}", cache, data, cache));
    return "images";
  }
  if (w.name.rfind("gpt", 0) == 0 || w.token_vocab > 0) {
    if (!fs::is_regular_file(data, ec))
      throw UsageError(
          fmt::format("--data {}: {} reads a token file (flat uint16 .bin, nanoGPT layout), not a folder", data, w.name));
    if (!cache.empty()) throw UsageError("--cache applies to image workloads only");
    return "tokens";
  }
  throw UsageError(
      fmt::format("--data: workload {} trains on synthetic data only; real data: resnet18/resnet50 or a model whose spec takes "
                  "images (B, 3, S, S) (an image folder), gpt-mini/gpt2-124m or a model taking tokens (B, T) (a token file)",
                  w.name));
}

}  // namespace autotune
