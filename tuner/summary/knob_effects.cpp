#include "tuner/summary/knob_effects.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "knobs/knob.h"
#include "tuner/measures/paired_rounds.h"
#include "tuner/measures/statistics.h"

namespace autotune {

namespace {

/// `knob`'s value in this run's baseline.
std::string baseline_value(const RunContext& ctx, const std::string& knob) {
  const auto wd = ctx.defaults.find(knob);
  return ctx.baseline.get(knob, find_knob(knob).baseline(wd == ctx.defaults.end() ? "" : wd->second));
}

/// The knobs `winner` changed from the baseline; with an effective batch grad_accum moves with batch_size (one effect).
std::vector<std::string> changed_knobs(const RunContext& ctx, const Config& winner) {
  std::vector<std::string> out;
  for (const auto& [k, v] : winner.values())
    if (!(ctx.opts.strategy.effective_batch > 0 && k == "grad_accum") && v != baseline_value(ctx, k)) out.push_back(k);
  return out;
}

/// The config `e` compares the winner with, in journals without effect rounds: exactly the ablation config when
/// measured; else (uncoupled knobs) any config differing from the winner only in `e.knob`, preferring the baseline
/// value, then a successful run. -1 when none was measured.
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

/// Fills `e`'s numbers from the winner `w` and the measured comparison `o` (index `j`): search and ablation runs.
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

/// The effect from the journal's search and ablation runs (a run without effect rounds).
void effect_from_search(KnobEffect& e, const RunSummary& s, const SummaryInput& in, const std::string& dflt) {
  const bool coupled = in.ctx.opts.strategy.effective_batch > 0 && e.knob == "batch_size";
  e.without = s.configs[s.winner].config;
  e.without.set(e.knob, dflt);
  if (coupled) e.without.set("grad_accum", in.ctx.baseline.get("grad_accum"));
  if (const int j = comparison_for(e, s, coupled); j >= 0) measure_effect(e, s.configs[s.winner], s.configs[j], j, dflt);
  else e.note = s.finished ? "not measured: the budget ended before the effect rounds" : "not measured (run interrupted)";
}

/// What `c` ran as in this run: the config the tune folded it into (the journal's folded proposals), else itself.
Config ran_as(const RunSummary& s, const Config& c) {
  for (const FoldedConfig& f : s.folded)
    if (f.proposed == c) return f.runs_as;
  return c;
}

/// The first failed run of `runs`, in words ("oom — CUDA out of memory"); "" when none failed.
std::string failure(const std::vector<const TrialRecord*>& runs) {
  for (const auto* r : runs)
    if (r->result.status != TrialStatus::ok)
      return to_string(r->result.status) + (r->result.message.empty() ? "" : " — " + r->result.message);
  return "";
}

/// The effect from the effect rounds: the winner's runs there (`w_runs`) against the reverted config's, paired round
/// by round, position by position (an effect re-measured R W W R pairs its two extra runs with the winner's two).
void effect_from_rounds(KnobEffect& e, const RunSummary& s, const SummaryInput& in,
                        const std::vector<const TrialRecord*>& w_runs) {
  const auto& o_runs = in.index.effects(e.without);
  e.without_config = config_index(s.configs, e.without);
  e.rounds = static_cast<int>(o_runs.size());
  e.remeasured = e.rounds > in.ctx.opts.confirm_rounds;
  if (o_runs.empty()) {
    e.note = s.finished ? "not measured: the budget ended before its effect round" : "not measured (run interrupted)";
    return;
  }
  if (const std::string f = failure(o_runs); !f.empty()) {
    e.note = "without it the run failed: " + f;
    return;
  }
  if (const std::string f = failure(w_runs); !f.empty()) {
    e.note = "the winner's effect run failed: " + f;
    return;
  }
  // Round by round (each round met one machine), in the effect rounds: every effect from the same rounds, so that their
  // product and the whole in those rounds compare (together(), below). A winner that changes one knob has one effect,
  // the whole: it is the headline, from the headline's rounds (the confirmation's as well), not a second number beside it.
  const Config& winner = s.configs[s.winner].config;
  const bool whole = e.without == s.configs[s.baseline].config;
  const PairedRatio r = paired_ratio(whole ? paired_rounds(in.index.confirms(winner), in.index.confirms(e.without), w_runs, o_runs)
                                           : paired_rounds(w_runs, o_runs));
  if (!(r.value > 0)) {
    e.note = "not measured: no effect round ran both the winner and it";
    return;
  }
  e.ratio = r.value;
  e.lo = r.lo;
  e.hi = r.hi;
  const Knob::EffectBound* bound = find_knob(e.knob).effect_bound(in.ctx.target.cuda);
  e.beyond_bound = bound && (e.lo > bound->max || e.hi < 1 / bound->max);
  if (e.beyond_bound)
    e.note = fmt::format(
        "{:.2f}× lies beyond what the mechanism allows on this device (at most {:.2f}× either way: {}){}", e.ratio, bound->max,
        bound->why,
        e.remeasured ? "; measured again with the same result: the rounds disagree with the mechanism — suspect another program "
                       "or a knob it acts with, not this knob alone"
                     : "; not measured again: the budget ended");
  else if (e.hi < 1)
    e.note = fmt::format("the winner is faster without it ({:.2f}× [{:.2f}, {:.2f}]) in the effect rounds, which ran after the "
                         "winner was chosen; search again with {}={} in the space",
                         e.ratio, e.lo, e.hi, e.knob, e.without_value);
}

/// The effects' product against the winner ÷ the baseline in the same effect rounds.
EffectsTogether together(const RunSummary& s, const SummaryInput& in, const std::vector<const TrialRecord*>& w_runs) {
  EffectsTogether t;
  if (s.knob_effects.size() < 2) return t;  // one knob: its effect is the whole
  t.product = 1;
  for (const KnobEffect& e : s.knob_effects) {
    if (!(e.ratio > 0) || e.rounds == 0) return EffectsTogether{};
    t.product *= e.ratio;
  }
  t.measured = true;
  // The winner over the baseline in the effect rounds alone, the rounds every effect comes from; none where no round
  // ran both fine (a failed or empty effect run of either: no whole to compare with).
  const PairedRatio ci = paired_ratio(paired_rounds(w_runs, in.index.effects(s.configs[s.baseline].config)));
  if (!(ci.value > 0)) return EffectsTogether{};
  t.rounds = static_cast<int>(ci.per_round.size());
  t.together = ci.value;
  t.lo = ci.lo;
  t.hi = ci.hi;
  t.interact = t.product < t.lo || t.product > t.hi;
  const std::string head = fmt::format("The knobs' effects multiply to {:.2f}×; together they give {:.2f}× the baseline [{:.2f}, {:.2f}] "
                                       "in the same interleaved rounds",
                                       t.product, t.together, t.lo, t.hi);
  t.line = t.interact
               ? fmt::format("{}: the knobs interact — together they give {:.0f}% {} than their effects multiplied (knobs that "
                             "relieve the same bottleneck overlap; one that pays only beside another adds more), so each "
                             "effect holds with the other knobs set as in the winner, not alone",
                             head, 100 * std::abs(t.together / t.product - 1), t.together < t.product ? "less" : "more")
               : head + ": they add up (no interaction beyond the noise)";
  return t;
}

}  // namespace

Config reverted(const RunContext& ctx, const Config& winner, const std::string& knob) {
  Config c = winner;
  c.set(knob, baseline_value(ctx, knob));
  if (ctx.opts.strategy.effective_batch > 0 && knob == "batch_size") c.set("grad_accum", ctx.baseline.get("grad_accum"));
  return c;
}

std::vector<Config> effect_round_configs(const RunContext& ctx, const RunSummary& summary) {
  if (summary.winner < 0 || summary.baseline < 0 || summary.winner == summary.baseline) return {};
  const Config& w = summary.configs[summary.winner].config;
  const Config& base = summary.configs[summary.baseline].config;
  std::vector<Config> out{w};
  for (const std::string& k : changed_knobs(ctx, w)) {
    const Config r = reverted(ctx, w, k);
    if (!(r == base) && std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  }
  out.push_back(base);
  return out;
}

std::vector<Config> effects_to_remeasure(const RunSummary& summary) {
  std::vector<Config> out;
  for (const KnobEffect& e : summary.knob_effects)
    if (e.beyond_bound && !e.remeasured) out.push_back(e.without);
  return out;
}

void add_knob_effects(RunSummary& summary, const SummaryInput& in) {
  const RunContext& ctx = in.ctx;
  const Config& w = summary.configs[summary.winner].config;
  const auto& w_runs = in.index.effects(w);
  for (const std::string& k : changed_knobs(ctx, w)) {
    KnobEffect e;
    e.knob = k;
    e.winner_value = w.get(k);
    e.without_value = baseline_value(ctx, k);
    if (w_runs.empty()) {
      effect_from_search(e, summary, in, e.without_value);
    } else {
      e.without = ran_as(summary, reverted(ctx, w, k));
      e.at_default = e.without.get(k) == e.without_value;
      if (!e.at_default)
        e.note = fmt::format("{}={} cannot run here: compared with {}={}", k, e.without_value, k, e.without.get(k));
      e.without_value = e.without.get(k);
      effect_from_rounds(e, summary, in, w_runs);
    }
    summary.knob_effects.push_back(e);
  }
  std::stable_sort(summary.knob_effects.begin(), summary.knob_effects.end(),
                   [](const KnobEffect& a, const KnobEffect& b) { return a.ratio > b.ratio; });
  summary.effects_together = together(summary, in, w_runs);
}

}  // namespace autotune
