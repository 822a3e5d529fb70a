// autotune memory: what each config needs in device memory and the largest batch that fits, from a few
// probes per family, without running the search (the study: tuner/memory/study.h; its words:
// reports/memory_study.h; docs/memory.md). --check runs each listed batch too (the same short probe, never fed to
// the fit) and prints the error.
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <unistd.h>

#include "knobs/error.h"
#include "knobs/memory.h"
#include "knobs/target.h"
#include "reports/memory_study.h"
#include "tuner/commands/command.h"
#include "tuner/exec/trial_runner.h"
#include "tuner/exec/worker_client.h"
#include "tuner/memory/study.h"

namespace autotune::cli {

namespace {

namespace fs = std::filesystem;

struct MemoryArgs {
  TrialFlags trial;
  std::vector<std::string> knobs;
  std::vector<std::int64_t> batches;
  std::int64_t probe_smallest = 0;
  double margin_pct = 5;
  bool check = false;
  std::string json_path, keep_dir;
};

int run(const MemoryArgs& a, std::ostream& o) {
  MemoryStudyOptions so;
  so.setup = a.trial.resolved_setup();
  const std::string worker = a.trial.worker_path();
  so.workload = describe_workload(worker, so.setup);
  so.target = make_target(so.workload, query_environment(worker), so.setup);
  if (so.setup.memory_cap.empty() && !so.target.cuda)
    throw UsageError("a CPU host has no device memory to predict against: give --memory-cap SIZE, the size of the device to emulate (e.g. --memory-cap 2G)");
  for (std::int64_t b : a.batches)
    if (b < 1 || b > (1 << 20)) throw UsageError(fmt::format("--batch-sizes {}: out of range; allowed: 1..1048576", b));
  if (!(a.margin_pct >= 0 && a.margin_pct < 100))
    throw UsageError(fmt::format("--margin {}: out of range; allowed: 0 ≤ margin < 100 (%)", a.margin_pct));
  so.knobs = a.knobs;
  for (const auto& k : a.knobs)
    if (KnobSpace().add_assignment(k).axes().front().first == "batch_size")
      throw UsageError("--knobs batch_size: give the batches with --batch-sizes (the model predicts every batch)");
  so.batches = a.batches;
  so.probe_smallest = a.probe_smallest;
  so.margin = a.margin_pct / 100;
  so.check = a.check;

  const bool temp = a.keep_dir.empty();
  const fs::path dir = temp ? fs::temp_directory_path() / fmt::format("autotune-memory-{}", ::getpid()) : fs::path(a.keep_dir);
  TrialRunner runner(RunnerOptions(worker, dir.string()).timeout_seconds(a.trial.trial_timeout));
  std::deque<TrialRecord> records;
  const auto run_plan = [&](const TrialPlan& p) -> const TrialRecord& {
    const int n = static_cast<int>(records.size()) + 1;
    records.push_back(runner.run(p, TrialKind::memory, n));
    records.back().id = n;
    return records.back();
  };
  MemoryStudy header;
  header.workload = so.workload.name;
  header.cuda = so.target.cuda;
  header.capped = !so.setup.memory_cap.empty();
  header.capacity = so.setup.memory_cap.empty() ? 0 : parse_size(so.setup.memory_cap, "--memory-cap");
  header.margin = so.margin;
  o << memory_study_header(header);
  const MemoryStudy s = run_memory_study(so, run_plan, [&](const MemoryStudyFamily& f) { o << memory_study_family_text(f, a.check); });
  o << memory_study_footer(s);
  if (!a.json_path.empty()) {
    std::ofstream f(a.json_path);
    f << memory_study_json(s).dump(2) << "\n";
    if (!f) throw std::runtime_error(a.json_path + ": cannot write");
  }
  if (temp) fs::remove_all(dir);
  // A study that predicted nothing (every family's probes failed) is a failed run, not an answer.
  const auto unknown = [](const MemoryStudyFamily& f) { return !f.why_unknown.empty(); };
  if (!s.families.empty() && std::all_of(s.families.begin(), s.families.end(), unknown)) {
    std::cerr << fmt::format("autotune memory: no family was predicted; the first: {}\n", s.families.front().why_unknown);
    return 1;
  }
  return 0;
}

}  // namespace

Command memory_command() {
  auto a = std::make_shared<MemoryArgs>();
  return {"memory", "predict each config's peak device memory and the largest batch that fits, from a few probes (no search)",
          [a](CLI::App* c) {
            a->trial.add_to(c);
            c->add_option("--knobs", a->knobs, "configs, e.g. --knobs precision=fp32,amp_bf16 checkpointing=none,blocks (one family each)");
            c->add_option("--batch-sizes", a->batches, "batches to predict (default: powers of two to 4 × the workload's)")->delimiter(',');
            c->add_option("--probe-batch", a->probe_smallest,
                          "probes run at batch P/4, P/2 and P (default: P = a quarter of the workload's batch, at least 4)");
            c->add_option("--margin", a->margin_pct, "fits: the upper prediction stays this many % below the capacity")->capture_default_str();
            c->add_flag("--check", a->check, "also measure every listed batch (a probe each, not used by the fit) and print the error");
            c->add_option("--json", a->json_path, "write the predictions (and measurements) to this file");
            c->add_option("--out", a->keep_dir, "keep each probe's plan.json/result.json in this folder (default: a temporary one)");
          },
          [a](std::ostream& o) { return run(*a, o); }};
}

}  // namespace autotune::cli
