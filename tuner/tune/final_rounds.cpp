#include "tuner/tune/final_rounds.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "knobs/numbers.h"
#include "tuner/measures/statistics.h"
#include "tuner/summary/knob_effects.h"

namespace autotune {

namespace fs = std::filesystem;

namespace {

/// One effect-round run of `cfg` (as it runs here), with its progress line.
void effect_run(TuneCore& run, const Config& cfg, const std::string& label) {
  const TrialRecord& rec = run.run_alone(run.plan_of(cfg, 1.0), TrialKind::effect);
  const TrialResult& r = rec.result;
  run.progress.line(rec.id, fmt::format("effect    {} {}: {}", cfg.diff_key(run.ctx.baseline), label,
                                        r.status == TrialStatus::ok ? with_commas(median(r.throughputs())) + " samples/s"
                                                                    : to_string(r.status) + ": " + r.message));
}

}  // namespace

void confirm(TuneCore& run) {
  // Nothing but the baseline stable: nothing to compare it with, and no budget to spend on it (a short budget whose
  // one trial overran it once ran the baseline again, against itself, for 144 s more).
  if (!run.has_rival()) return;
  std::vector<Config> runners;
  for (const ConfigSummary* c : confirmation_candidates(run.history, run.opts.confirm_top)) runners.push_back(c->config);
  if (std::find(runners.begin(), runners.end(), run.ctx.baseline) == runners.end()) runners.push_back(run.ctx.baseline);
  for (int round = 0; round < run.opts.confirm_rounds; ++round) {
    std::vector<Config> seq = runners;
    if (round % 2) std::reverse(seq.begin(), seq.end());
    for (const Config& c : seq) {
      if (static_cast<int>(run.index().confirms(c).size()) > round) continue;  // resumed
      if (round > 0 && !run.budget.fits(1)) break;
      const TrialRecord& rec = run.run_alone(run.plan_of(c, 1.0), TrialKind::confirm);
      const TrialResult& r = rec.result;
      run.progress.line(rec.id, fmt::format("confirm   {} round {}: {}", c.diff_key(run.ctx.baseline), round + 1,
                                            r.status == TrialStatus::ok ? with_commas(median(r.throughputs())) + " samples/s"
                                                                        : to_string(r.status) + ": " + r.message));
    }
  }
}

bool measure_effects(TuneCore& run, const RunSummary& summary) {
  std::vector<Config> round;  // as each runs here
  for (const Config& c : effect_round_configs(run.ctx, summary))
    if (const Config cfg = run.fold(Proposal{c, 1.0, "effect"}); std::find(round.begin(), round.end(), cfg) == round.end())
      round.push_back(cfg);
  if (round.size() < 2) return false;
  bool ran = false;
  for (int r = 0; r < std::max(1, run.opts.confirm_rounds); ++r) {
    std::vector<Config> seq = round;
    if (r % 2) std::reverse(seq.begin(), seq.end());
    const auto left =
        std::count_if(seq.begin(), seq.end(), [&](const Config& c) { return run.index().effects(c).size() <= size_t(r); });
    if (left == 0) continue;  // resumed
    if (!run.budget.fits(static_cast<int>(left))) break;
    for (const Config& c : seq)
      if (run.index().effects(c).size() <= size_t(r)) effect_run(run, c, fmt::format("round {}", r + 1));
    ran = true;
  }
  return ran;
}

bool remeasure_effects(TuneCore& run, const RunSummary& summary) {
  bool ran = false;
  for (const Config& c : effects_to_remeasure(summary)) {
    if (!run.budget.fits(4)) break;
    const Config& w = summary.configs[summary.winner].config;
    run.progress.note(
        fmt::format("{}: its effect lies beyond what the knob's mechanism allows here; measuring it again", c.diff_key(w)));
    for (const Config* x : {&c, &w, &w, &c}) effect_run(run, *x, "again");
    ran = true;
  }
  return ran;
}

bool trace_winner(TuneCore& run, const RunSummary& summary) {
  if (summary.winner < 0) return false;
  std::vector<std::pair<std::string, Config>> to_trace = {{"winner", summary.configs[summary.winner].config}};
  if (summary.winner != summary.baseline) to_trace.push_back({"baseline", run.ctx.baseline});
  bool traced = false;
  for (const auto& [label, c] : to_trace) {
    const auto& traces = run.index().traces();
    const Config& cfg = c;  // a structured binding cannot be captured before C++20 (clang refuses it)
    if (std::any_of(traces.begin(), traces.end(), [&](const TrialRecord* r) { return r->plan.config == cfg; }) ||
        !run.budget.fits(1))
      continue;
    fs::create_directories(run.out / "traces");
    TrialPlan plan = run.plan_of(c, 1.0);
    plan.trace = fs::absolute(run.out / "traces" / (label + ".json")).string();
    const TrialRecord& rec = run.run_alone(plan, TrialKind::trace);
    const TrialResult& r = rec.result;
    const std::string written =  // ranks > 1: a folder with a file per rank (knobs/protocol.h, rank_trace_path)
        r.profile && !r.profile->trace.empty() ? fs::relative(r.profile->trace, fs::absolute(run.out)).string() : label + ".json";
    run.progress.line(rec.id, fmt::format("trace     {} {}: {}", label, c.diff_key(run.ctx.baseline),
                                          r.status == TrialStatus::ok ? written : to_string(r.status) + ": " + r.message));
    traced = true;
  }
  return traced;
}

}  // namespace autotune
