#include "reports/gbench_json.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "knobs/knob.h"
#include "knobs/protocol.h"
#include "reports/run_facts.h"

namespace autotune {

using nlohmann::json;

namespace {

double mean(const std::vector<double>& v) { return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / v.size(); }
double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean(v);
  double ss = 0;
  for (double x : v) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}
double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::string benchmark_name(const std::string& subject, const Config& c, const std::map<std::string, std::string>& defaults,
                           const std::string& workload_batch) {
  std::map<std::string, std::string> diff;  // name order
  for (const Knob& k : knob_catalog()) {
    const std::string value = c.has(k.name) ? c.get(k.name) : k.baseline(workload_batch);
    if (value != Config::default_of(k.name, defaults, workload_batch)) diff[k.name] = value;
  }
  std::string out;
  for (const auto& [k, v] : diff) out += (out.empty() ? "" : ",") + k + "=" + v;
  return subject + "/" + (out.empty() ? "defaults" : out);
}

json render_gbench_json(const RunSummary& s) {
  json context = {{"date", s.finished_at},
                  {"host_name", s.env.hostname},
                  {"executable", "autotune"},
                  {"num_cpus", s.env.cpu_cores},
                  {"mhz_per_cpu", 0},
                  {"cpu_scaling_enabled", false},
                  {"caches", json::array()},
                  {"library_build_type", "release"},
                  {"autotune_workload", s.workload.name},
                  {"autotune_strategy", s.strategy},
                  {"autotune_environment", s.env}};
  json benchmarks = json::array();
  int family = 0;
  const auto defaults = baseline_defaults(s);
  const std::string b0 = std::to_string(s.workload.default_batch_size);
  for (const auto& c : s.configs) {
    if (c.status != TrialStatus::ok || c.throughputs.empty()) continue;  // failed configs have no timings
    const std::string name = benchmark_name(s.workload.name, c.config, defaults, b0);
    std::vector<double> us;  // per sample
    for (double t : c.throughputs) us.push_back(us_per_sample(t));
    const int reps = static_cast<int>(us.size());
    for (int i = 0; i < reps; ++i) {
      benchmarks.push_back({{"name", name},
                            {"family_index", family},
                            {"per_family_instance_index", 0},
                            {"run_name", name},
                            {"run_type", "iteration"},
                            {"repetitions", reps},
                            {"repetition_index", i},
                            {"threads", 1},
                            {"iterations", 1},
                            {"real_time", us[i]},
                            {"cpu_time", us[i]},
                            {"time_unit", kBenchTimeUnit},
                            {"samples_per_second", c.throughputs[i]},
                            {"autotune_config", c.config.key()}});
    }
    auto aggregate = [&](const char* agg, double t, double sps, const char* unit) {
      benchmarks.push_back({{"name", name + "_" + agg},
                            {"family_index", family},
                            {"per_family_instance_index", 0},
                            {"run_name", name},
                            {"run_type", "aggregate"},
                            {"repetitions", reps},
                            {"threads", 1},
                            {"aggregate_name", agg},
                            {"aggregate_unit", unit},
                            {"iterations", reps},
                            {"real_time", t},
                            {"cpu_time", t},
                            {"time_unit", kBenchTimeUnit},
                            {"samples_per_second", sps}});
    };
    aggregate("mean", mean(us), mean(c.throughputs), "time");
    aggregate("median", median_of(us), median_of(c.throughputs), "time");
    aggregate("stddev", stddev(us), stddev(c.throughputs), "time");
    const double cv = mean(us) > 0 ? stddev(us) / mean(us) : 0;
    aggregate("cv", cv, mean(c.throughputs) > 0 ? stddev(c.throughputs) / mean(c.throughputs) : 0, "percentage");
    ++family;
  }
  return {{"context", context}, {"benchmarks", benchmarks}};
}

}  // namespace autotune
