#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "reports/summary.h"

namespace autotune {

/// The name a measured config carries in results.json, a tune's and a check's alike, so that Google
/// Benchmark's compare.py pairs two runs config by config: "SUBJECT/DIFF". SUBJECT is the workload, or a
/// user's model file's stem; DIFF the knobs whose effective value (the one set, else the worker's own
/// default; batch_size unset = `workload_batch`) differs from `defaults` (PyTorch 2.11's defaults: the
/// tune's baseline), as knob=value joined by commas in name order, or "defaults" when none does. Two tunes
/// that searched different knobs name the same training the same way.
std::string benchmark_name(const std::string& subject, const Config& c, const std::map<std::string, std::string>& defaults,
                           const std::string& workload_batch);

/// One unit for every results.json autotune writes (tune and check): an iteration is one training sample,
/// real_time = cpu_time = microseconds per sample (lower is better, as compare.py reads it).
constexpr const char* kBenchTimeUnit = "us";
inline double us_per_sample(double samples_per_s) { return samples_per_s > 0 ? 1e6 / samples_per_s : 0; }

/// results.json in Google Benchmark's JSON schema (as 1.7.1 writes it), so tools that read benchmark
/// output (tools/compare.py, github-action-benchmark's googlecpp, Bencher) read a tuning run:
///  - `context`: date, host_name, executable, num_cpus, library_build_type, plus autotune's fingerprint;
///  - one `iteration` entry per measured window of each config's measured trial (a repetition): name from
///    benchmark_name, real_time = cpu_time = µs per sample, counters `samples_per_second`, and
///    `autotune_config` (the config's full key);
///  - `aggregate` entries mean / median / stddev / cv per config over its windows.
nlohmann::json render_gbench_json(const RunSummary& s);

}  // namespace autotune
