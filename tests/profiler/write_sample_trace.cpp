// Writes DIR/trace/trace.json (the exporter's output for a training-like stream) and DIR/summary.json
// (our analysis of the same stream) for tests/profiler/hta_check.py.
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
  std::ofstream(std::string(argv[1]) + "/trace/trace.json") << chrome_trace(s).dump();
  const autotune::ProfileSummary p = analyze(s, {});
  nlohmann::json j = {{"busy_share", p.busy_share},
                      {"host_wait_share", p.host_wait_share},
                      {"kernel_wait_share", p.kernel_wait_share},
                      {"other_idle_share", p.other_idle_share},
                      {"steps", p.steps},
                      {"step_ms", p.step_ms},
                      {"syncs_per_step", p.syncs_per_step}};
  std::ofstream(std::string(argv[1]) + "/summary.json") << j.dump(2);
  return 0;
}
