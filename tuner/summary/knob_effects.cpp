#include "tuner/summary/knob_effects.h"

#include <fmt/format.h>

#include <algorithm>

#include "knobs/knob.h"
#include "tuner/statistics.h"

namespace autotune {

namespace {

/// The config `e` compares the winner with: exactly the ablation config when measured; else (uncoupled
/// knobs) any config differing from the winner only in `e.knob`, preferring the baseline value, then a
/// successful run. -1 when none was measured.
int comparison_for(const KnobEffect& e, const RunSummary& s, bool coupled) {
  const auto& configs = s.configs;
  const Config& w = configs[s.winner].config;
  int best = -1;
  for (int j = 0; j < static_cast<int>(configs.size()); ++j) {
    if (j == s.winner) continue;
    const Config& c = configs[j].config;
    bool match = c == e.without;
    if (!match && !coupled) {
      match = c.get(e.knob) != e.winner_value && c.values().size() == w.values().size();
      for (const auto& [k2, v2] : w.values())
        if (k2 != e.knob && c.get(k2) != v2) match = false;
    }
    if (!match) continue;
    auto score = [&](int i) { return (configs[i].config == e.without ? 2 : 0) + (configs[i].status == TrialStatus::ok ? 1 : 0); };
    if (best < 0 || score(j) > score(best)) best = j;
  }
  return best;
}

/// Fills `e`'s numbers from the winner `w` and the measured comparison `o` (index `j`).
void measure_effect(KnobEffect& e, const ConfigSummary& w, const ConfigSummary& o, int j, const std::string& dflt) {
  e.without_config = j;
  e.at_default = o.config == e.without;
  e.without_value = o.config.get(e.knob);
  e.without = o.config;
  if (!e.at_default)
    e.note = fmt::format("the default ({}) was not measured; compared with {}={}", dflt, e.knob, e.without_value);
  const std::string prefix = e.note.empty() ? "" : e.note + "; ";
  if (o.status != TrialStatus::ok || o.median <= 0 || w.throughputs.empty()) {
    e.note =
        fmt::format("{}without it the run failed: {}{}", prefix, to_string(o.status), o.reason.empty() ? "" : " — " + o.reason);
    return;
  }
  e.ratio = w.median / o.median;
  const Interval r = bootstrap_ratio_ci(w.throughputs, o.throughputs);
  e.lo = r.lo;
  e.hi = r.hi;
  if (e.hi < 1)  // the whole CI below 1: this knob makes the winner slower
    e.note = fmt::format("{}the winner is faster without it ({:.2f}× [{:.2f}, {:.2f}]): {}; search again with {}={} in the space",
                         prefix, e.ratio, e.lo, e.hi,
                         o.phase == "ablation" ? "that config was measured only as an ablation, after the search and confirmation"
                                               : "the confirmation did not include that config",
                         e.knob, e.without_value);
}

}  // namespace

void add_knob_effects(RunSummary& summary, const SummaryInput& in) {
  const RunContext& ctx = in.ctx;
  const ConfigSummary& w = summary.configs[summary.winner];
  const bool coupled_batch = ctx.opts.strategy.effective_batch > 0;  // batch_size × grad_accum held fixed
  for (const auto& [k, v] : w.config.values()) {
    if (coupled_batch && k == "grad_accum") continue;  // moves with batch_size: one effect, not two
    const auto wd = ctx.defaults.find(k);
    const std::string dflt = ctx.baseline.get(k, find_knob(k).baseline(wd == ctx.defaults.end() ? "" : wd->second));
    if (v == dflt) continue;
    KnobEffect e;
    e.knob = k;
    e.winner_value = v;
    e.without_value = dflt;
    e.without = w.config;
    e.without.set(k, dflt);
    if (coupled_batch && k == "batch_size") e.without.set("grad_accum", ctx.baseline.get("grad_accum"));
    if (const int j = comparison_for(e, summary, coupled_batch && k == "batch_size"); j >= 0)
      measure_effect(e, w, summary.configs[j], j, dflt);
    else e.note = summary.finished ? "not measured: the budget ended before the ablation run" : "not measured (run interrupted)";
    summary.knob_effects.push_back(e);
  }
  std::stable_sort(summary.knob_effects.begin(), summary.knob_effects.end(),
                   [](const KnobEffect& a, const KnobEffect& b) { return a.ratio > b.ratio; });
}

}  // namespace autotune
