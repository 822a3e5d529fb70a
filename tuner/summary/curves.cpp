#include "tuner/summary/curves.h"

#include <fmt/format.h>

#include <algorithm>

#include "knobs/knob.h"
#include "tuner/search/stability.h"

namespace autotune {

namespace {

/// At most ~1000 points, evenly thinned, so a long run's curve stays a small chart.
LossCurve make_curve(const std::string& label, const TrialResult& r) {
  LossCurve c;
  c.label = label;
  std::vector<double> all = r.warmup_losses;
  all.insert(all.end(), r.losses.begin(), r.losses.end());
  c.stride = std::max<int>(1, static_cast<int>((all.size() + 999) / 1000));
  for (size_t i = 0; i < all.size(); i += static_cast<size_t>(c.stride)) c.losses.push_back(all[i]);
  return c;
}

/// The knobs among `names` that exist and apply here: a verdict never names a knob that cannot apply
/// (memory_format for an MLP).
std::vector<std::string> applicable(const std::vector<std::string>& names, const TargetInfo& target) {
  std::vector<std::string> out;
  const auto all = knob_names();
  for (const auto& n : names)
    if (std::find(all.begin(), all.end(), n) != all.end() && !find_knob(n).not_applicable(target)) out.push_back(n);
  return out;
}

/// Where the winner's time goes, from its host phase times (no traced profile needed).
Verdict host_verdict(const ConfigSummary& w, bool on_gpu, const TargetInfo& target) {
  Verdict v;
  const Breakdown& b = w.breakdown;
  const double total = b.data_ms + b.h2d_ms + b.forward_ms + b.backward_ms + b.optimizer_ms + b.other_ms;
  if (total <= 0) {
    v.detail = "no per-phase times were recorded for the winner";
    return v;
  }
  auto pct = [&](double x) { return 100 * x / total; };
  v.detail = fmt::
      format("per step {:.2f} ms: data {:.0f}%, H2D {:.0f}%, forward {:.0f}%, backward {:.0f}%, optimizer {:.0f}%, other {:.0f}%",
             total, pct(b.data_ms), pct(b.h2d_ms), pct(b.forward_ms), pct(b.backward_ms), pct(b.optimizer_ms), pct(b.other_ms));
  v.basis = on_gpu ? "host time per phase (no GPU timeline in this run: asynchronous kernels are counted in the phase "
                     "that waits for them, so treat the split as indicative)"
                   : "host wall-clock time per phase (CPU run: the phases are the work itself)";
  struct Rule {
    double share;
    double at_least;
    const char* kind;
    std::vector<std::string> knobs;
  };
  const std::vector<Rule> rules = {
      {pct(b.data_ms), 100 * kInputBoundShare, "input-bound", {"num_workers", "prefetch", "decode", "pin_memory"}},
      {pct(b.h2d_ms), 20, "transfer-bound", {"pin_memory", "precision"}},
      {pct(b.optimizer_ms), 25, "optimizer-bound", {"optimizer_impl", "grad_accum", "zero_grad"}},
      {pct(b.other_ms), 30, "host-bound", {"log_every", "cuda_graphs"}},
      {pct(b.forward_ms + b.backward_ms),
       60,
       "compute-bound",
       {"precision", "memory_format", "batch_size", on_gpu ? "cudnn_benchmark" : "threads"}},
  };
  v.kind = "mixed";
  for (const Rule& r : rules)
    if (r.share >= r.at_least) {
      v.kind = r.kind;
      v.knobs = applicable(r.knobs, target);
      break;
    }
  return v;
}

/// The verdict of a valid traced profile of the winner.
Verdict profile_verdict(const ProfileSummary& p) {
  Verdict v;
  v.kind = p.verdict;
  v.detail = p.verdict_detail;
  v.basis = p.mode == "cupti"
                ? fmt::format("CUPTI GPU timeline of {} traced steps (tracing inflation {:.2f}×)", p.steps, p.inflation)
                : fmt::format("host phase times of {} traced steps ({})", p.steps, p.reason);
  v.knobs = p.verdict_knobs;
  return v;
}

}  // namespace

void add_curves_verdict_and_profiles(RunSummary& summary, const SummaryInput& in) {
  const ConfigSummary& w = summary.configs[summary.winner];
  const ConfigSummary& base = summary.configs[summary.baseline];
  const TrialRecord* wr = in.index.by_id(w.measured_trial);
  if (wr) summary.loss_curves.push_back(make_curve("winner", wr->result));
  if (wr && !wr->result.data.source.empty()) summary.data = wr->result.data;
  if (w.config.get("precision", "fp32") != "fp32") {
    Config twin = w.config;
    twin.set("precision", "fp32");
    if (const auto& refs = in.index.references(twin); !refs.empty())
      summary.loss_curves.push_back(make_curve("fp32 reference of the winner", refs.back()->result));
  }
  if (summary.winner != summary.baseline)
    if (const TrialRecord* r = in.index.by_id(base.measured_trial))
      summary.loss_curves.push_back(make_curve(fmt::format("baseline (batch {})", base.batch_size), r->result));

  summary.verdict = host_verdict(w, wr && wr->result.device.rfind("cuda", 0) == 0, in.ctx.target);
  // Traced trials: the profile of the winner and the baseline; the winner's verdict, when its profile
  // is valid, replaces the host-time one.
  for (const TrialRecord* r : in.index.traces()) {
    if (r->result.status != TrialStatus::ok || !r->result.profile) continue;
    const std::string label = r->plan.config == w.config ? "winner" : r->plan.config == base.config ? "baseline" : "";
    if (label.empty()) continue;
    const ProfileSummary& p = *r->result.profile;
    summary.profiles.push_back({label, r->plan.config, p, r->plan.trace});
    if (label == "winner" && p.valid && !p.verdict.empty()) summary.verdict = profile_verdict(p);
  }
  // What was not profiled, and why: a missing section says nothing to a reader.
  std::vector<std::pair<std::string, const Config*>> wanted = {{"winner", &w.config}};
  if (summary.winner != summary.baseline) wanted.push_back({"baseline", &base.config});
  for (const auto& [label, cfg] : wanted) {
    const std::string& l = label;
    if (std::any_of(summary.profiles.begin(), summary.profiles.end(), [&](const TracedProfile& t) { return t.label == l; }))
      continue;
    std::string why = !summary.finished ? "not traced: the run was interrupted"
                      : summary.elapsed_seconds >= 0.8 * summary.budget_seconds
                          ? "not traced: the budget ended before the traced trials (they run last, after the confirmation "
                            "and the ablations, when one more trial fits)"
                          : "not traced: the journal holds no traced trial of it (`autotune profile --set …` traces one)";
    for (const TrialRecord* r : in.index.traces())
      if (r->plan.config == *cfg)
        why = r->result.status != TrialStatus::ok
                  ? fmt::format("the traced trial ended with {}: {}", to_string(r->result.status), r->result.message)
                  : "the traced trial returned no profile";
    summary.unprofiled.emplace_back(label, why);
  }
}

}  // namespace autotune
