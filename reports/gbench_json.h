#pragma once
#include <nlohmann/json.hpp>

#include "reports/summary.h"

namespace autotune {

/// results.json in Google Benchmark's JSON schema (as 1.7.1 writes it), so tools that read benchmark
/// output (tools/compare.py, github-action-benchmark's googlecpp, Bencher) read a tuning run:
///  - `context`: date, host_name, executable, num_cpus, library_build_type, plus autotune's fingerprint;
///  - one `iteration` entry per measured window of each config's measured trial (a repetition):
///    name "WORKLOAD/CONFIG", iterations = steps, real_time = cpu_time = milliseconds per step,
///    counter `samples_per_second`;
///  - `aggregate` entries mean / median / stddev / cv per config over its windows.
nlohmann::json render_gbench_json(const RunSummary& s);

}  // namespace autotune
