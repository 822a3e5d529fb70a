// Writes DIR/trace/trace.json (the exporter's output for a training-like stream) and DIR/summary.json
// (our analysis of the same stream), and a two-rank data-parallel set (DIR/ranks/rank{0,1}.json and our
// communication figures in DIR/ranks.json), for tests/profiler/hta_check.py.
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "profiler/analysis.h"
#include "profiler/trace_export.h"
#include "tests/profiler/sample_stream.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: write_sample_trace DIR\n";
    return 2;
  }
  using namespace autotune::prof;
  const ActivityStream s = testing_stream::training_like(5);
  std::filesystem::create_directories(std::string(argv[1]) + "/trace");
  std::ofstream(std::string(argv[1]) + "/trace/trace.json") << trace_text(chrome_trace(s));
  const autotune::ProfileSummary p = analyze(s, {});
  nlohmann::json j = {{"busy_share", p.busy_share},
                      {"host_wait_share", p.host_wait_share},
                      {"kernel_wait_share", p.kernel_wait_share},
                      {"other_idle_share", p.other_idle_share},
                      {"steps", p.steps},
                      {"step_ms", p.step_ms},
                      {"syncs_per_step", p.syncs_per_step}};
  std::ofstream(std::string(argv[1]) + "/summary.json") << j.dump(2);

  // Two ranks of a data-parallel step: NCCL allreduce kernels on their own stream during and after
  // backward (which runs 1.6–7.8 ms into each 10 ms step); rank 0's mostly under the backward kernels,
  // rank 1's mostly after them. DIR/ranks holds one trace per rank (what HTA's multi-rank analysis
  // loads); DIR/ranks.json our communication figures per rank.
  nlohmann::json ranks = nlohmann::json::array();
  std::filesystem::create_directories(std::string(argv[1]) + "/ranks");
  for (int rank = 0; rank < 2; ++rank) {
    ActivityStream r = testing_stream::training_like(5);
    r.pid = 4242 + rank;
    std::uint32_t corr = 100000;
    for (int st = 0; st < 5; ++st) {
      const std::int64_t t = 1000000000LL + st * 10000000LL;
      for (int b = 0; b < 3; ++b) {
        const std::int64_t start = t + (rank == 0 ? 5000000 : 7000000) + b * 700000;
        r.records.push_back(
            testing_stream::activity(ActKind::runtime, "cudaLaunchKernel", start - 300000, start - 290000, corr, r.pid));
        Activity k =
            testing_stream::activity(ActKind::kernel, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                                     start, start + 600000, corr++, 0);
        k.stream = 13;
        r.records.push_back(k);
      }
    }
    for (auto& a : r.records)
      if (a.kind == ActKind::range || a.kind == ActKind::runtime) a.tid = r.pid;
    std::ofstream(std::string(argv[1]) + "/ranks/rank" + std::to_string(rank) + ".json")
        << trace_text(chrome_trace(r, rank, 2, "nccl"));
    const autotune::ProfileSummary q = analyze(r, {});
    ranks.push_back({{"rank", rank},
                     {"hidden_share", q.comm ? q.comm->hidden_share : -1.0},
                     {"comm_ms_per_step", q.comm ? q.comm->ms_per_step : -1.0},
                     {"calls_per_step", q.comm ? q.comm->calls_per_step : -1.0}});
  }
  std::ofstream(std::string(argv[1]) + "/ranks.json") << ranks.dump(2);
  return 0;
}
