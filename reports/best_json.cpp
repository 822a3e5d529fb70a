#include "reports/best_json.h"

#include "reports/run_facts.h"

#include <cmath>

#include "knobs/json_get.h"
#include "knobs/protocol.h"

namespace autotune {

using nlohmann::json;

namespace {

json config_json(const Config& c) { return json(c); }  // knobs/protocol's form: knob → value strings

/// Answer (c), the batch ramp (docs/outputs.md, "time"): its phases and predicted times, or why there is none; null
/// when neither.
json ramp_json(const RunSummary& s) {
  const RampAnswer& r = s.answer_c;
  if (r.proposed) {
    json phases = json::array();
    for (const auto& p : r.phases)
      phases.push_back({{"config", config_json(s.configs[p.config].config)}, {"global_batch", p.global_batch},
                        {"micro_batch", p.micro_batch}, {"grad_accum", p.grad_accum}, {"from_samples", p.from_samples},
                        {"to_samples", p.to_samples}, {"noise_scale_at_start", p.noise_at_start},
                        {"samples_per_second", p.samples_per_s}, {"predicted_seconds", p.seconds},
                        {"learning_rate", {{"gain", p.lr_gain}, {"adam", p.lr_adam}, {"sgd", p.lr_sgd}}}});
    json ramp = {{"phases", phases},
                 {"run_samples", r.run_samples},
                 {"predicted_seconds", {{"ramp", r.seconds}, {"at_your_batch", r.a_seconds}, {"baseline", r.baseline_seconds}}},
                 {"vs_at_your_batch", {{"ratio", r.vs_a}, {"band", {r.vs_a_min, r.vs_a_max}}}},
                 {"noise_scale_band", {r.band_lo, finite_or_null(r.band_hi)}},
                 {"advised", r.advised}, {"min_gain_over_fixed", kRampMinGain}};
    if (r.b_seconds > 0) {
      ramp["predicted_seconds"]["changed_batch"] = r.b_seconds;
      ramp["vs_changed_batch"] = {{"ratio", r.vs_b}, {"band", {r.vs_b_min, r.vs_b_max}}};
    }
    return ramp;
  }
  return r.note.empty() ? json() : json{{"why_not", r.note}};
}

/// The lr-sweeps run from this run since (tuner/pricing/lr_beside.h): each batch's measured rate, and (b) over (a) priced
/// at them; null without one.
json lr_measured_json(const RunSummary& s) {
  const LrMeasured& m = s.lr_measured;
  if (!m.at_user.present && !m.at_b.present && m.refused.empty()) return nullptr;
  json lm = json::object();
  for (const LrSwept* w : {&m.at_user, &m.at_b})
    if (w->present)
      lm[w->at] = {{"sweep", w->sweep_dir}, {"date", w->date}, {"global_batch", w->global_batch}, {"centre_lr", w->centre_lr},
                   {"best_lr", w->best_lr}, {"verdict", w->verdict}, {"gain", w->gain}, {"gain_range", {w->gain_lo, w->gain_hi}},
                   {"prices", w->prices()}};
  if (m.b_over_a > 0) lm["changed_batch_time_ratio_at_measured_rates"] = m.b_over_a;
  if (const RampAtMeasured& q = m.ramp; !q.phases.empty()) {  // answer (c) at the measured rates
    json phases = json::array();
    for (const RampPhaseAtMeasured& p : q.phases)
      phases.push_back({{"global_batch", p.global_batch},
                        {"priced_by", p.priced_by.empty() ? "rule" : p.priced_by},
                        {"learning_rate", p.priced_by.empty() ? json(nullptr) : json(p.lr)},
                        {"gain", p.gain},
                        {"predicted_seconds", p.seconds}});
    lm["batch_ramp"] = {{"phases", phases}, {"predicted_seconds", q.seconds}, {"vs_at_your_batch", q.vs_a}};
    if (q.vs_b > 0) lm["batch_ramp"]["vs_changed_batch"] = q.vs_b;
  }
  if (!m.refused.empty()) lm["refused"] = m.refused;
  return lm;
}

/// The time objective's answers and the noise scale behind them (docs/outputs.md, "time").
json time_json(const RunSummary& s) {
  json t = {{"objective", s.by_time ? "time" : "throughput"}};
  if (!s.by_time) return t;
  t["user_batch"] = s.user_batch;
  t["user_batch_source"] = s.user_batch_source;
  t["answer"] = s.winner < 0 ? "none" : s.winner == s.answer_a ? "at_your_batch" : "changed_batch";
  t["time_speedup"] = s.time_speedup;
  if (s.answer_a >= 0)
    t["at_your_batch"] = {{"config", config_json(s.configs[s.answer_a].config)},
                          {"speedup", {{"median", s.answer_a_speedup}, {"ci95", {s.answer_a_lo, s.answer_a_hi}}}}};
  const TimeAnswer& b = s.answer_b;
  if (b.config >= 0) {
    json x = {{"config", config_json(s.configs[b.config].config)},
              {"global_batch", b.global_batch},
              {"throughput_ratio", b.throughput_ratio},
              {"ranked_by_time", b.time_ratio > 0}};
    if (b.time_ratio > 0) {
      x["time_ratio"] = b.time_ratio;
      x["time_ratio_band"] = {b.time_ratio_min, b.time_ratio_max};
      x["noise_scale_band"] = {b.band_lo, finite_or_null(b.band_hi)};
      x["wins_across_band"] = b.beats_a;
    }
    if (b.lr.given)
      x["learning_rate"] = {{"from", b.lr.lr_from}, {"gain", b.lr.gain}, {"adam", b.lr.lr_adam}, {"sgd", b.lr.lr_sgd},
                            {"note", "a starting point (AdaScale gain; Adam-family × √r, SGD × r); warm up linearly"}};
    t["changed_batch"] = x;
  }
  if (const json ramp = ramp_json(s); !ramp.is_null()) t["batch_ramp"] = ramp;  // answer (c)
  if (const json lm = lr_measured_json(s); !lm.is_null()) t["learning_rate_measured"] = lm;
  const NoiseScaleSummary& n = s.noise_scale;
  json ns = {{"measured", n.measured}, {"usable", n.usable}};
  if (n.measured)
    ns.update({{"value", n.value},
               {"ci95", {n.lo, finite_or_null(n.hi)}},
               {"rel_se", n.rel_se},
               {"steps", n.steps},
               {"micro_batch", n.micro_batch},
               {"step_batch", n.step_batch},
               {"stopped", n.stopped},
               {"weights", n.weights},
               {"noise_log", n.log},
               {"data", n.data},
               {"state", !n.log.empty() ? "logged in the user's own training loop"
                         : n.early       ? "early training from random weights: grows as the loss falls"
                                         : "from the user's weights"},
               {"trial_id", n.trial_id}});
  if (!n.why_not.empty()) ns["why_not"] = n.why_not;
  if (!n.windows.empty()) {  // along the run (docs/outputs.md, "time")
    json w = json::array();
    for (const auto& x : n.windows)
      w.push_back({{"samples", {x.from_samples, x.to_samples}}, {"steps", x.steps}, {"value", x.value},
                   {"ci95", {x.lo, finite_or_null(x.hi)}}, {"loss", x.loss}});
    json along = {{"windows", w}};
    if (n.growth.fitted)
      along["growth"] = {{"exponent_in_samples", n.growth.exponent}, {"ci95", {n.growth.lo, n.growth.hi}},
                         {"prior", {n.growth.prior_mean, n.growth.prior_sd}}, {"prior_share", n.growth.prior_share}};
    if (n.growth.loss_fitted)
      along["growth"]["exponent_in_loss"] = {{"value", n.growth.loss_exponent}, {"ci95", {n.growth.loss_lo, n.growth.loss_hi}}};
    along["over_run"] = n.over_run;
    if (n.over_run)
      along.update({{"run_samples", n.run_samples}, {"run_basis", n.run_basis}, {"measured_to_samples", n.measured_to},
                    {"held_beyond_samples", n.cap_samples},
                    {"trial", {{"value", n.trial_value}, {"ci95", {n.trial_lo, finite_or_null(n.trial_hi)}}}}});
    else if (!n.over_run_note.empty()) along["why_not"] = n.over_run_note;
    ns["along_run"] = along;
  }
  t["noise_scale"] = ns;
  return t;
}

json measured(const ConfigSummary& c) {
  return {{"config", config_json(c.config)},
          {"status", to_string(c.status)},
          {"batch_size", c.batch_size},
          {"samples_per_s",
           {{"median", c.median}, {"ci95", {c.ci_lo, c.ci_hi}}, {"windows", c.throughputs}, {"rel_iqr", c.rel_iqr}}},
          {"peak_memory_bytes", c.peak_bytes},
          {"trial_ids", c.trial_ids}};
}

/// The winner: its config, numbers, stability checks and the tie-break (nulls when nothing was stable).
void add_winner(json& j, const RunSummary& s) {
  if (s.winner >= 0) {
    const ConfigSummary& w = s.configs[s.winner];
    j["config"] = config_json(w.config);
    j["winner"] = measured(w);
    if (const CompileFacts c = compile_facts(s, s.winner); c.present) {
      const CompileRecord& r = *w.compile;
      j["winner"]["compile"] = {{"mode", r.mode},
                                {"seconds", r.seconds},
                                {"graphs", r.graphs},
                                {"graph_breaks", r.graph_breaks},
                                {"break_reasons", r.break_reasons},
                                {"recompiles", r.recompiles},
                                {"cache_hits", r.cache_hits},
                                {"cache_misses", r.cache_misses},
                                {"priced_over", c.priced_over},
                                {"priced_factor", c.factor},
                                {"break_even_steps", c.break_even_steps > 0 ? json(c.break_even_steps) : json(nullptr)},
                                {"sentence", c.sentence}};
    }
    json checks = json::array();
    for (const auto& c : w.checks) checks.push_back({{"check", c.name}, {"passed", c.passed}, {"detail", c.detail}});
    checks.push_back({{"check", "confirmation"}, {"passed", s.confirmation.confirmed}, {"detail", s.confirmation.detail}});
    j["stability"] = checks;
    j["tie_break"] = s.winner_note;
  } else {
    j["config"] = nullptr;
    j["winner"] = nullptr;
    j["stability"] = json::array();
    j["tie_break"] = "";
  }
}

/// The interleaved confirmation: the winner's and each candidate's.
void add_confirmation(json& j, const RunSummary& s) {
  j["confirmation"] = {{"ran", s.confirmation.ran},
                       {"confirmed", s.confirmation.confirmed},
                       {"trial_id", s.confirmation.trial_id},
                       {"median", s.confirmation.median},
                       {"ci95", {s.confirmation.ci_lo, s.confirmation.ci_hi}},
                       {"detail", s.confirmation.detail}};
  json confs = json::array();
  for (const auto& [c, conf] : s.confirmations)
    confs.push_back({{"config", config_json(c)},
                     {"confirmed", conf.confirmed},
                     {"median", conf.median},
                     {"ci95", {conf.ci_lo, conf.ci_hi}},
                     {"detail", conf.detail}});
  j["candidates"] = confs;
}

/// Each knob's share of the win.
json knob_effects_json(const RunSummary& s) {
  json effects = json::array();
  for (const auto& e : s.knob_effects) {
    json x = {{"knob", e.knob},
              {"winner_value", e.winner_value},
              {"without_value", e.without_value},
              {"at_default", e.at_default}};
    if (e.ratio > 0) x["speedup"] = {{"median", e.ratio}, {"ci95", {e.lo, e.hi}}};
    if (e.rounds > 0) x["effect_rounds"] = e.rounds;  // absent: from search and ablation runs (an older journal)
    if (e.beyond_bound) x["beyond_mechanism_bound"] = true;
    if (e.remeasured) x["remeasured"] = true;
    if (!e.note.empty()) x["note"] = e.note;
    effects.push_back(x);
  }
  return effects;
}

/// The effects' product against the whole, in the same effect rounds; null when not measured.
json effects_together_json(const RunSummary& s) {
  const EffectsTogether& t = s.effects_together;
  if (!t.measured) return nullptr;
  return {{"product", t.product}, {"together", {{"median", t.together}, {"ci95", {t.lo, t.hi}}}}, {"rounds", t.rounds},
          {"interact", t.interact}, {"line", t.line}};
}

/// Trials side by side (docs/scale-out.md): where, what it cost, the interference.
void add_scale_out(json& j, const RunSummary& s) {
  if (s.scale_out.slots > 1) {  // trials side by side (docs/scale-out.md): where, what it cost, the interference
    const ScaleOut& so = s.scale_out;
    j["scale_out"] = {{"executor", so.executor},
                      {"slots", so.slots},
                      {"places", so.places},
                      {"device_seconds", so.device_seconds},
                      {"trials_beside", so.trials_beside},
                      {"finalists_beside", so.finalists_beside},
                      {"interference", so.copies > 0 ? json(so.interference()) : json(nullptr)},
                      {"alone_samples_per_s", so.alone},
                      {"beside_samples_per_s", so.beside},
                      {"copies", so.copies}};
  }
}

/// What was searched, how long it took and the thresholds in force.
json search_json(const RunSummary& s) {
  json skipped = json::array();
  for (const auto& k : s.skipped_knobs) skipped.push_back({{"knob", k.knob}, {"reason", k.reason}});
  json unexplored = json::array();
  for (const auto& c : s.unexplored) unexplored.push_back(config_json(c));
  std::size_t ablations = 0;
  for (const auto& c : s.configs) ablations += c.phase == "ablation" ? 1 : 0;
  return {{"strategy", s.strategy},
                 {"space", s.space},
                 {"skipped_knobs", skipped},
                 {"configs_measured", s.configs.size() - ablations},
                 {"ablation_configs", ablations},
                 {"trials", s.trials_run},
                 {"unexplored", unexplored},
                 {"budget_seconds", s.budget_seconds},
                 {"elapsed_seconds", s.elapsed_seconds},
                 {"started_at", s.started_at},
                 {"finished_at", s.finished_at},
                 {"thresholds", {{"max_rel_iqr", s.max_rel_iqr}, {"max_drift", s.max_drift}, {"memory_headroom", s.memory_headroom}}},
                 {"host_noise", {{"calibrating", s.noise.calibrating}, {"trials", s.noise.trials}, {"busy_left_out", s.noise.busy_left_out},
                                 {"median_rel_iqr", s.noise.host_rel_iqr}, {"median_drift", s.noise.host_drift},
                                 {"given_max_rel_iqr", s.noise.given_max_rel_iqr}, {"given_max_drift", s.noise.given_max_drift},
                                 {"raised", s.noise.raised}, {"at_cap", s.noise.at_cap}}}};
}

}  // namespace

json render_best_json(const RunSummary& s) {
  json j;
  j["schema"] = kBestSchema;
  j["workload"] = s.workload;
  j["environment"] = s.env;
  // "no_winner": some config was stable but none could be ranked (reports/run_facts.h, no_winner_label).
  j["status"] = s.winner >= 0 ? "ok" : any_stable(s) ? "no_winner" : "no_stable_config";
  add_winner(j, s);
  if (s.baseline >= 0) j["baseline"] = measured(s.configs[s.baseline]);
  if (!s.frontend.empty()) {  // the baseline's values and where each is PyTorch's default (docs/baseline.md)
    json src = json::array();
    for (const auto& b : s.baseline_sources) src.push_back({{"knob", b.knob}, {"value", b.value}, {"source", b.source}});
    j["baseline_defaults"] = {{"frontend", s.frontend}, {"values", src}};
  }
  if (s.speedup > 0)
    j["speedup"] = {{"median", s.speedup},
                    {"ci95", {s.speedup_lo, s.speedup_hi}},
                    {"basis", s.speedup_basis},
                    {"significant", s.speedup_lo > 1.0 && s.winner != s.baseline}};
  else j["speedup"] = nullptr;
  add_confirmation(j, s);
  j["knob_effects"] = knob_effects_json(s);
  if (s.effects_together.measured) j["knob_effects_together"] = effects_together_json(s);
  j["time_to_train"] = time_json(s);
  if (!s.data.source.empty())  // real data: where, how much, what was skipped
    j["data"] = {{"source", s.data.source},
                 {"decode", s.data.decode},
                 {"dataset_size", s.data.dataset_size},
                 {"images_read", s.data.images_ok},
                 {"images_skipped", s.data.images_bad},
                 {"bad_example", s.data.bad_example}};
  if (!s.folded.empty()) {  // proposals that ran as another config (knobs/resolve.h), with the reasons
    json folded = json::array();
    for (const auto& f : s.folded)
      folded.push_back({{"proposed", config_json(f.proposed)}, {"runs_as", config_json(f.runs_as)}, {"reasons", f.reasons}});
    j["folded"] = folded;
  }
  if (s.memory.on) j["memory"] = s.memory;  // the memory model's predictions and skips (knobs/memory.h, docs/memory.md)
  add_scale_out(j, s);
  j["search"] = search_json(s);
  return j;
}

}  // namespace autotune
