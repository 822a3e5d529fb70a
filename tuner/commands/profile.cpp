// autotune profile: a few traced steps of one config — where the time goes, and a Chrome trace.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <memory>
#include <ostream>

#include "knobs/error.h"
#include "knobs/knob.h"
#include "reports/profile_text.h"
#include "tuner/commands/command.h"
#include "tuner/commands/range_check.h"

namespace autotune::cli {

namespace {

namespace fs = std::filesystem;

struct ProfileArgs {
  TrialFlags trial;
  std::vector<std::string> set;
  std::string trace;
  int steps = 5;
  bool force = false;
  bool json = false;
};

/// The profile as the reports write it (reports/profile_text.h), indented, then what to try. The trace
/// opens in https://ui.perfetto.dev or Holistic Trace Analysis.
void print_profile(const TrialResult& r, const TrialPlan& plan, std::ostream& o) {
  const ProfileSummary& p = *r.profile;
  o << fmt::format("{} {} on {}: {} profile of {} steps ({})\n", r.workload, plan.config.key(), r.device, p.mode, p.steps,
                   p.reason.empty() ? "CUPTI activity" : p.reason);
  // its reason is in the line above; ranks > 1 wrote rank 0's trace into a folder
  const ProfileText t = profile_text(p, "trial", p.trace.empty() ? plan.trace : p.trace);
  for (const auto& line : t.lines) o << "  " << line << "\n";
  for (const auto& k : t.kernels)  // share, calls × time per call = time, name, launched from, grid × block
    o << fmt::format("    {:>5}  {:>5}× {:>10} = {:>10}  {}  [{}; {}]\n", k[4], k[1], k[2], k[3], k[0], k[5], k[6]);
  for (const auto& k : p.verdict_knobs) o << fmt::format("    try {}: {}\n", k, find_knob(k).tip);
}

int run(const ProfileArgs& a, std::ostream& o) {
  TrialPlan plan = a.trial.plan(a.set);
  plan.trace = absolute(a.trace);
  plan.trace_steps = a.steps;
  // ranks > 1: the ranks write into a folder (knobs/protocol.h, rank_trace_path)
  const std::string ranks = plan.config.get("ranks", "1");
  const std::string target =
      ranks == "1" || ranks == "default" ? plan.trace : fs::path(rank_trace_path(plan.trace, 0)).parent_path().string();
  if (fs::exists(target) && !a.force)
    throw UsageError(fmt::format("--trace {} already exists; pass --force to replace it", target));
  if (target != plan.trace && fs::is_directory(target))  // --force: no stale rank file from an earlier, wider trial
    for (const auto& e : fs::directory_iterator(target))
      if (e.path().filename().string().rfind("rank", 0) == 0 && e.path().extension() == ".json") fs::remove(e.path());
  const TrialRecord rec = a.trial.run_checked(plan);
  const TrialResult& r = rec.result;
  if (a.json) {  // the whole result.json, profile included, for scripts (scripts/device-check.sh)
    o << nlohmann::json(r).dump(2) << "\n";
    return r.status == TrialStatus::ok && r.profile ? 0 : 1;
  }
  if (r.status != TrialStatus::ok || !r.profile) {
    o << fmt::format("{} {}: {}: {}\n", r.workload, plan.config.key(), to_string(r.status), r.message);
    return 1;
  }
  print_profile(r, plan, o);
  return 0;
}

}  // namespace

Command profile_command() {
  auto a = std::make_shared<ProfileArgs>();
  return {
      "profile", "trace a few steps of one config in a fresh worker: where the time goes, and a Chrome trace (Perfetto, HTA)",
      [a](CLI::App* c) {
        a->trial.add_to(c);
        c->add_option("--set", a->set, "knob=value (repeatable), e.g. --set precision=amp_bf16");
        c->add_option(
             "--trace", a->trace,
             "write the trace here (Chrome trace JSON, kineto conventions); ranks > 1: into a folder of this name without .json, rank<R>.json per rank")
            ->required();
        c->add_option("--steps", a->steps, "steps to trace (after warm-up and as many untraced reference steps)")
            ->capture_default_str()
            ->check(within(1, 1000));
        c->add_flag("--force", a->force, "replace an existing --trace file");
        c->add_flag("--json", a->json, "print result.json (with its profile) instead of the summary");
      },
      [a](std::ostream& o) { return run(*a, o); }};
}

}  // namespace autotune::cli
