// Costs the tuner adds per trial, which must stay negligible next to a trial (seconds):
// committing one trial to journal.sqlite, and the 95% bootstrap CI of a trial's windows.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>

#include "tuner/measures/journal.h"
#include "tuner/measures/statistics.h"

namespace {

using namespace autotune;

void BM_JournalAppend(benchmark::State& state) {
  const auto path = std::filesystem::temp_directory_path() / ("autotune-bench-" + std::to_string(::getpid()) + ".sqlite");
  std::filesystem::remove(path);
  {
    Journal j(path.string());
    TrialRecord r;
    r.plan.setup.workload = "mlp";
    r.plan.config.set("batch_size", "64");
    r.result.status = TrialStatus::ok;
    for (int i = 0; i < 3; ++i) r.result.windows.push_back({100, 6400, 1.0});
    r.result.losses.assign(300, 0.5);                            // a realistic result.json: ~300 measured steps
    for (auto _ : state) benchmark::DoNotOptimize(j.append(r));  // one committed transaction each
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
}
BENCHMARK(BM_JournalAppend)->Unit(benchmark::kMicrosecond);

void BM_BootstrapMedianCi(benchmark::State& state) {
  std::vector<double> xs;
  for (int i = 0; i < state.range(0); ++i) xs.push_back(1000 + (i * 37) % 50);
  for (auto _ : state) benchmark::DoNotOptimize(bootstrap_median_ci(xs));
}
BENCHMARK(BM_BootstrapMedianCi)->Arg(3)->Arg(10)->Arg(30)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
