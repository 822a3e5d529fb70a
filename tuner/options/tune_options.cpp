#include "tuner/options/tune_options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <thread>
#include <type_traits>
#include <nlohmann/json.hpp>

#include "knobs/error.h"
#include "knobs/knob.h"
#include "tuner/pricing/run_length.h"

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

void TuneOptions::derive() {
  parse_run_length(run_length);  // a bad --run-length is a usage error before anything runs
  strategy.seed = setup.seed;
  strategy.other_batches = objective == ObjectiveKind::time;
  // Unpinned local slots share the CPUs by request: each trial would count the others as a busy host.
  if (exec.executor == ExecutorKind::local && exec.parallel > 1 && !exec.pin) stability.max_host_load = 1.0;
}

namespace {

template <class T>
constexpr bool is_enum_v = std::is_enum_v<T>;

/// An option as JSON: enums by their names, the rest as they are.
template <class T>
nlohmann::json value_json(const T& v) {
  if constexpr (is_enum_v<T>) return to_string(v);
  else return v;
}

/// `v` from JSON: enums from their names (UsageError naming the allowed ones), strings checked against the row's
/// words ("memory-model 'maybe' is not allowed; allowed: on, off").
template <class T>
void read_value(const OptionSpec& spec, const nlohmann::json& j, T& v) {
  if constexpr (is_enum_v<T>) {
    from_string(j.get<std::string>(), v);
  } else {
    v = j.get<T>();
    if constexpr (std::is_same_v<T, std::string>)
      if (!spec.choices.empty() && std::find(spec.choices.begin(), spec.choices.end(), v) == spec.choices.end())
        throw UsageError(fmt::format("{} '{}' is not allowed; allowed: {}", spec.flag.empty() ? spec.key : spec.flag.substr(2), v,
                                     fmt::join(spec.choices, ", ")));
  }
}

}  // namespace

nlohmann::json options_to_json(const TuneOptions& o) {
  nlohmann::json j = o.setup;
  j["space"] = space_to_json(o.space);
  TuneOptions::visit([&](const OptionSpec& spec, const auto& v) { j[spec.key] = value_json(v); }, o);
  return j;
}

void options_from_json(const nlohmann::json& j, TuneOptions& o) {
  o.setup = j.get<TrialSetup>();
  o.space = space_from_json(j.at("space"));
  const TuneOptions defaults;
  TuneOptions::visit(
      [&](const OptionSpec& spec, auto& v, const auto& dflt) {
        if (j.contains(spec.key)) read_value(spec, j.at(spec.key), v);
        else if (spec.must_be_stored) read_value(spec, j.at(spec.key), v);  // throws: key not found
        else if (!spec.before.empty()) read_value(spec, nlohmann::json::parse(spec.before), v);
        else v = dflt;
      },
      o, defaults);
  o.derive();
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
