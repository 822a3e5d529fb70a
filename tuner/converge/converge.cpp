#include "tuner/converge/converge.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <ostream>

#include "knobs/adascale.h"
#include "knobs/error.h"
#include "knobs/json_get.h"
#include "knobs/model_spec.h"
#include "knobs/numbers.h"
#include "knobs/protocol.h"
#include "reports/converge_report.h"
#include "reports/lr_sweep_summary.h"
#include "tuner/measures/journal.h"
#include "tuner/measures/statistics.h"
#include "tuner/search/ranking.h"
#include "tuner/summary/confirmation.h"
#include "tuner/summary/summarize.h"
#include "tuner/converge/arms.h"
#include "tuner/converge/held_out.h"
#include "tuner/exec/trial_runner.h"
#include "tuner/options/tune_options.h"
#include "tuner/exec/worker_client.h"
#include "tuner/pricing/calibration.h"

namespace autotune {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kMetaKey = "converge";

std::string default_out_dir() { return utc_now_formatted("runs/converge-%Y%m%d-%H%M%S"); }

/// The samples a step of `c` trains (batch_size, or the workload's default, × grad_accum × ranks).
std::int64_t global_batch_of(const Config& c, const WorkloadInfo& w) {
  return global_batch(c, c.has("batch_size") ? std::stoll(c.get("batch_size")) : w.default_batch_size);
}

/// One training run to do: its config, data order, learning rate and what it is.
struct Planned {
  Config config;
  std::int64_t data_order = 0;
  double lr = 0;
  double fixed_lr = 0;                   ///< > 0: the run trains at this rate (an lr-sweep's), not at the batch rule's
  double beta1 = 0, beta2 = 0, eps = 0;  ///< 0: the setup's
  ConvergeRunMeta meta;
  /// A batch ramp (answer c): its phases, each lr the gain r over the user's (× √r at the run's lr; ordered_runs).
  std::vector<RampStep> ramp;
  bool hand_lr = false;  ///< a ramp by hand: each phase's lr as given, 0 for the scaled rule's at its batch
};

/// A ramp given by hand (--ramp-phases) on the baseline's config: each phase's lr kept as given (0: the scaled rule's,
/// filled in by ordered_runs); its prediction none.
Planned hand_ramp_arm(const Config& base, const std::vector<RampStep>& phases) {
  Planned p;
  p.config = base;
  p.ramp = phases;
  p.hand_lr = true;
  std::string accums;
  for (const auto& ph : phases) accums += (accums.empty() ? "" : " → ") + std::to_string(ph.grad_accum);
  p.meta.label = "batch ramp by hand, grad_accum " + accums;
  p.meta.role = "candidate";
  return p;
}

/// Answer (c) of the tune run as an arm: its first phase's config, the phases' switches and learning-rate gains, and
/// the tune's predicted time ratio against the baseline.
Planned ramp_arm(const RunSummary& s) {
  const RampAnswer& r = s.answer_c;
  if (!r.proposed)
    throw UsageError(fmt::format("--compare ramp: the tune run has no batch ramp ({}); its report's answer (c) says why",
                                 r.note.empty() ? "it did not rank by time to train" : r.note));
  Planned p;
  p.config = s.configs[r.phases.front().config].config;
  std::string batches;
  for (const RampPhaseSummary& ph : r.phases) {
    p.ramp.push_back({static_cast<std::int64_t>(std::llround(ph.from_samples)), ph.grad_accum, ph.lr_gain});
    batches += (batches.empty() ? "" : " → ") + std::to_string(ph.global_batch);
  }
  p.ramp.front().from_samples = 0;
  p.meta.label = "batch ramp " + batches;
  p.meta.role = "candidate";
  if (r.seconds > 0) p.meta.predicted_by_tune = r.baseline_seconds / r.seconds;
  return p;
}

/// (B0 + B̄) / (B + B̄); 1 at the user's batch; B0/B without a noise scale would be a guess: NaN.
double efficiency(std::int64_t B, std::int64_t B0, double bn) {
  if (B == B0) return 1;
  if (!(bn > 0)) return std::nan("");
  if (!std::isfinite(bn)) return 1;
  return (static_cast<double>(B0) + bn) / (static_cast<double>(B) + bn);
}

/// The learning rate a run at global batch B starts from, for a user's `lr` at B0 (tuner/search/ranking.h,
/// lr_advice), by the optimizer's family (WorkloadInfo::optimizer_family): SGD-like × r, Adam-like × √r — the built-in
/// workloads train with AdamW —, any other kept as it is (no rule is invented). Without a noise scale, r = B/B0.
double scaled_lr(double lr, std::int64_t B, std::int64_t B0, double bn, const std::string& family) {
  if (B == B0 || B0 <= 0) return lr;
  return lr_at_gain(lr, adascale_gain(static_cast<double>(B), static_cast<double>(B0), bn), family);
}

/// The candidates of a tune run named by `names` (pick, changed-batch, at-your-batch, fastest), each once
/// (a config that answers several names carries them all in its label), with the tune's own prediction.
std::vector<Planned> candidates_of_run(const RunSummary& s, const std::vector<std::string>& names) {
  std::vector<Planned> out;
  auto add = [&](int j, const std::string& name) {
    if (j < 0 || j == s.baseline) return;
    const Config& c = s.configs[j].config;
    for (auto& p : out)
      if (p.config == c && p.ramp.empty()) {
        p.meta.label += " = " + name;
        return;
      }
    Planned p;
    p.config = c;
    p.meta.label = name;
    p.meta.role = "candidate";
    p.meta.picked = j == s.winner;
    // The tune's claim: its measured samples/s ratio (the interleaved rounds' when it ran there, paired round by
    // round) × the efficiency.
    double ratio = s.configs[s.baseline].median > 0 ? s.configs[j].median / s.configs[s.baseline].median : 0;
    for (const auto& [cc, conf] : s.confirmations)
      if (cc == c && conf.ran && conf.ratio > 0) ratio = conf.ratio;
    if (j == s.winner && s.speedup > 0) ratio = s.speedup;  // the headline's own ratio (its rounds include the effect rounds)
    const double eff = efficiency(s.configs[j].global_batch, s.user_batch > 0 ? s.user_batch : s.configs[s.baseline].global_batch,
                                  s.noise_scale.measured ? s.noise_scale.value : 0);
    // Answer (b)'s config: the prediction its first screen printed, over the baseline (tuner/summary/confirmation.h),
    // not a second computation from pooled medians that could print another number beside it.
    if (const double b = j == s.answer_b.config ? answer_b_over_baseline(s) : 0; b > 0)
      p.meta.predicted_by_tune = b;
    else if (ratio > 0 && std::isfinite(eff))
      p.meta.predicted_by_tune = ratio * eff;
    out.push_back(p);
  };
  for (const auto& n : names) {
    if (n == "ramp") out.push_back(ramp_arm(s));  // never one of the configs: its batch changes as it trains
    else if (n == "pick") add(s.winner, "the pick");
    else if (n == "changed-batch") add(s.answer_b.config, "changed batch");
    else if (n == "at-your-batch") add(s.answer_a, "at your batch");
    else if (n == "fastest") {
      int best = -1;
      for (int j = 0; j < static_cast<int>(s.configs.size()); ++j)
        if (s.configs[j].eligible && s.configs[j].phase != "ablation" && (best < 0 || s.configs[j].median > s.configs[best].median))
          best = j;
      add(best, "fastest in samples/s");
    } else {
      throw UsageError(fmt::format("--compare '{}' is not allowed; allowed: pick, changed-batch, at-your-batch, fastest, ramp", n));
    }
  }
  return out;
}

json header_json(const ConvergeSummary& h, const std::vector<ConvergeRunMeta>& metas) {
  json runs = json::array();
  for (const auto& m : metas)
    runs.push_back({{"label", m.label},
                    {"role", m.role},
                    {"predicted_by_tune", m.predicted_by_tune},
                    {"picked", m.picked},
                    {"lr_gain", m.lr_gain},
                    {"sweep_loss", m.sweep_loss},
                    {"sweep_start", m.sweep_start},
                    {"sweep_reference", m.sweep_reference}});
  return {{"workload", h.workload},
          {"env", h.env},
          {"data", h.data},
          {"from_run", h.from_run},
          {"from_sweep", h.from_sweep},
          {"user_batch", h.user_batch},
          {"noise_scale", h.noise_scale},
          {"noise_lo", h.noise_lo},
          {"noise_hi", finite_or_null(h.noise_hi)},
          {"noise_basis", h.noise_basis},
          {"seconds_per_run", h.seconds_per_run},
          {"baseline_samples", h.baseline_samples},
          {"adam_rule", h.adam_rule},
          {"target_loss", h.target_loss},
          {"smooth_samples", h.smooth_samples},
          {"smooth_given", h.smooth_given},
          {"held_out_every", h.held_out.every},
          {"started_at", h.started_at},
          {"runs", runs}};
}

ConvergeSummary header_from_json(const json& j, std::vector<ConvergeRunMeta>& metas) {
  ConvergeSummary h;
  h.workload = j.at("workload").get<WorkloadInfo>();
  h.env = j.at("env").get<EnvFingerprint>();
  h.data = j.value("data", std::string());
  h.from_run = j.value("from_run", std::string());
  h.from_sweep = j.value("from_sweep", std::string());
  h.user_batch = j.value("user_batch", std::int64_t{0});
  h.noise_scale = j.value("noise_scale", 0.0);
  h.noise_lo = j.value("noise_lo", 0.0);
  if (j.contains("noise_hi") && j["noise_hi"].is_number()) h.noise_hi = j["noise_hi"].get<double>();
  h.noise_basis = j.value("noise_basis", std::string());
  h.seconds_per_run = j.value("seconds_per_run", 0.0);
  h.baseline_samples = j.value("baseline_samples", std::int64_t{0});
  h.adam_rule = j.value("adam_rule", std::string("none"));  // runs from before the rule kept β and ε
  h.target_loss = j.value("target_loss", 0.0);
  h.smooth_samples = j.value("smooth_samples", std::int64_t{1024});
  h.smooth_given = j.value("smooth_given", false);
  h.held_out.every = j.value("held_out_every", std::int64_t{0});
  h.started_at = j.value("started_at", std::string());
  metas.clear();
  for (const auto& r : j.at("runs"))
    metas.push_back({r.at("label").get<std::string>(), r.at("role").get<std::string>(), r.value("predicted_by_tune", 0.0),
                     r.value("picked", false), r.value("lr_gain", 1.0), r.value("sweep_loss", 0.0),
                     r.value("sweep_start", std::int64_t{0}), r.value("sweep_reference", 0)});
  return h;
}


}  // namespace

namespace {

/// What a run changes from the baseline: its knobs, or — the same config at another rate (an lr-sweep's arm) — its rate.
std::string change_from(const Config& c, const Config& base, double lr, double base_lr) {
  if (c == base && lr != base_lr) return fmt::format("lr {:.3g}", lr);
  return c.diff_key(base);
}

/// Each run as the summary shows it: its config and change from the baseline, its curve, speed and final loss.
void add_runs(ConvergeSummary& s, const std::vector<TrialRecord>& records, const std::vector<ConvergeRunMeta>& metas) {
  const Config base_config = records.empty() ? Config() : records.front().plan.config;
  for (size_t i = 0; i < records.size() && i < metas.size(); ++i) {
    const TrialRecord& r = records[i];
    ConvergeRun run;
    run.label = metas[i].label;
    run.role = metas[i].role;
    run.config = r.plan.config;
    run.global_batch = global_batch(r.plan.config, r.result.batch_size);
    run.ramp = r.plan.converge.ramp;
    run.data_order = r.plan.setup.data_order;
    run.lr = trained_lr(r.plan.setup, s.workload);
    run.change = change_from(r.plan.config, base_config, run.lr, s.runs.empty() ? run.lr : s.runs.front().lr);
    run.beta1 = r.plan.setup.beta1();
    run.beta2 = r.plan.setup.beta2();
    run.eps = r.plan.setup.eps();
    run.trial_id = r.id;
    run.status = to_string(r.result.status);
    run.message = r.result.message;
    if (r.result.converge) {
      run.curve = r.result.converge->points;
      if (!run.curve.empty()) {
        run.seconds = run.curve.back().seconds;
        run.samples_per_s = run.seconds > 0 ? static_cast<double>(run.curve.back().samples) / run.seconds : 0;
        run.final_loss = smoothed_loss(run.curve, run.curve.size() - 1, s.smooth_samples);
      }
      run.held_out = r.result.converge->val_points;
    }
    s.runs.push_back(run);
  }
}

/// How long the baseline's runs trained: "each trained 120 s", or to the user's run length — "each trained to 60,000
/// samples, your run's length", and any the seconds stopped first.
std::string baseline_length_text(const ConvergeSummary& s) {
  if (s.baseline_samples <= 0) return fmt::format("each trained {:.0f} s", s.seconds_per_run);
  const std::string run = with_commas(static_cast<double>(s.baseline_samples));
  std::int64_t shortest = s.baseline_samples;
  for (const ConvergeRun* r : baseline_runs(s)) shortest = std::min(shortest, r->curve.back().samples);
  if (shortest < s.baseline_samples)
    return fmt::format("each to train {} samples, your run's length, but one stopped at its {:.0f} s after {} samples: the "
                       "target lies earlier in your run than its end (give more --seconds)",
                       run, s.seconds_per_run, with_commas(static_cast<double>(shortest)));
  return fmt::format("each trained to {} samples, your run's length: the loss your run ends at", run);
}

/// The loss every run is timed to, and each run's time and samples to it.
void add_target(ConvergeSummary& s) {
  // The runs' common target: the one given, else the worst final smoothed loss of the baseline's runs — a loss each
  // of its data orders reached (equal wall time makes the slowest reach it last). It times the runs' table and the
  // spread ε; each candidate is compared at its own target (add_comparisons), from the baseline and itself alone.
  if (s.target_loss > 0) {
    s.target_basis = "given (--target-loss)";
  } else {
    double worst = 0;
    int n = 0;
    for (const auto& r : s.runs)
      if (baseline_role(r.role) && r.status == "ok" && std::isfinite(r.final_loss)) {
        worst = std::max(worst, r.final_loss);
        ++n;
      }
    s.target_loss = worst;
    s.target_basis = fmt::format(
        "the worst final loss of the baseline's {} run(s) ({}): a loss each of them reached; each "
        "candidate is compared with the baseline at the worse of this loss and its own final one, a loss both reached, so "
        "adding or dropping another candidate changes no comparison",
        n, baseline_length_text(s));
  }
  for (auto& r : s.runs) {
    if (r.status != "ok" || r.curve.empty()) continue;
    const Reached t = time_to_target(r.curve, s.target_loss, s.smooth_samples);
    r.reached = t.reached();
    r.time_to_target = r.reached ? t.seconds : 0;
    r.samples_to_target = r.reached ? t.samples : 0;
  }
}

/// The samples a comparison smooths its two runs' losses over: the one given (--smooth-samples, or the lr-sweep's), else
/// 8 × the larger of their global batches, at least 1,024 — from the two of them alone (the runs' table uses the window
/// of every run).
std::int64_t comparison_window(const ConvergeRun& base, const ConvergeRun& c, const ConvergeSummary& s) {
  return s.smooth_given ? s.smooth_samples : default_smoothing_window(std::max(base.global_batch, c.global_batch));
}

/// A run's loss at its end, smoothed over a comparison's `window`; NaN for a run that did not finish (not ok, no curve,
/// a non-finite loss in its last window): such a run says nothing of where training ended.
double final_loss(const ConvergeRun& r, std::int64_t window) {
  if (r.status != "ok" || r.curve.empty()) return std::nan("");
  return smoothed_loss(r.curve, r.curve.size() - 1, window);
}

/// Candidate `c` (its runs on every data order, `cands`, the first on order 0) against the baseline's runs: the loss all
/// of them reached (`given` when > 0, else the worse of the baseline runs' worst final loss and the candidate runs'),
/// and the times, samples and measured ratios to it — the mean over the orders, and each order against the baseline's
/// same order (or the baseline's mean where no baseline run has it).
void time_at_target(ConvergeComparison& cmp, const std::vector<const ConvergeRun*>& cands, const std::vector<const ConvergeRun*>& bases,
                    std::int64_t B0, double given, const ConvergeSummary& s) {
  if (bases.empty() || cands.empty()) return;
  const ConvergeRun& c = *cands.front();
  const std::int64_t w = comparison_window(*bases.front(), c, s);
  cmp.target_loss = given;
  if (given <= 0) {
    for (const ConvergeRun* b : bases) cmp.target_loss = std::max(cmp.target_loss, final_loss(*b, w));
    for (const ConvergeRun* k : cands)
      if (const double f = final_loss(*k, w); std::isfinite(f)) cmp.target_loss = std::max(cmp.target_loss, f);
  }
  std::vector<double> base_times, base_samples, shares;
  std::vector<std::pair<std::int64_t, double>> base_by_order;
  for (const ConvergeRun* b : bases)
    if (const Reached t = time_to_target(b->curve, cmp.target_loss, w); t.reached()) {
      base_times.push_back(t.seconds);
      base_samples.push_back(static_cast<double>(t.samples));
      base_by_order.emplace_back(b->data_order, t.seconds);
      if (b->seconds > 0) shares.push_back(t.seconds / b->seconds);
    }
  if (!shares.empty()) cmp.target_share = mean_value(shares);
  std::vector<double> cand_times, cand_samples;
  cmp.order_ratios.clear();
  for (const ConvergeRun* k : cands) {
    const Reached t = k->status == "ok" && !k->curve.empty() ? time_to_target(k->curve, cmp.target_loss, w) : Reached{};
    if (!t.reached() || t.seconds <= 0) {
      if (k == cands.front()) return;  // order 0 must reach it; another order that fails is left out
      continue;
    }
    cand_times.push_back(t.seconds);
    cand_samples.push_back(static_cast<double>(t.samples));
    double base = base_times.empty() ? 0 : mean_value(base_times);
    for (const auto& [order, secs] : base_by_order)
      if (order == k->data_order) base = secs;
    if (base > 0) cmp.order_ratios.push_back(base / t.seconds);
  }
  if (base_times.empty() || cand_times.empty()) return;
  cmp.orders = static_cast<int>(cand_times.size());
  // The baseline's mean over the data orders the candidate trained on (paired), so the headline lies among its orders'
  // ratios; over all its orders only where it has none of them.
  std::vector<double> paired_times, paired_samples;
  for (const ConvergeRun* k : cands)
    for (std::size_t i = 0; i < base_by_order.size(); ++i)
      if (base_by_order[i].first == k->data_order) {
        paired_times.push_back(base_by_order[i].second);
        paired_samples.push_back(base_samples[i]);
      }
  if (!paired_times.empty()) {
    base_times = paired_times;
    base_samples = paired_samples;
  }
  cmp.baseline_time = mean_value(base_times);
  cmp.candidate_time = mean_value(cand_times);
  cmp.measured = cmp.baseline_time / cmp.candidate_time;
  cmp.samples_ratio = mean_value(cand_samples) / mean_value(base_samples);
  const double r = cmp.samples_ratio, B = static_cast<double>(c.global_batch), b0 = static_cast<double>(B0);
  if (c.ramp.empty() && c.global_batch != B0 && r > 1 && B - r * b0 > 0) cmp.implied_noise_scale = (B - r * b0) / (r - 1);
}

/// Where the candidate's runs and the baseline's ended (ConvergeComparison::candidate_final, late_target): the final
/// smoothed losses, and when every candidate run ended below the lowest loss the baseline ever reached, the lower bound
/// on the ratio below it.
void time_at_end(ConvergeComparison& cmp, const std::vector<const ConvergeRun*>& cands, const std::vector<const ConvergeRun*>& bases,
                 const ConvergeSummary& s) {
  if (bases.empty() || cands.empty()) return;
  const std::int64_t w = comparison_window(*bases.front(), *cands.front(), s);
  std::vector<double> cf, bf;
  for (const ConvergeRun* k : cands)
    if (const double f = final_loss(*k, w); std::isfinite(f)) cf.push_back(f);
  for (const ConvergeRun* b : bases) bf.push_back(final_loss(*b, w));
  if (cf.empty() || cf.size() < cands.size()) return;  // a candidate run that did not finish says nothing of its end
  cmp.candidate_final = mean_value(cf);
  cmp.baseline_final = mean_value(bf);
  double lowest = std::numeric_limits<double>::infinity();
  std::vector<double> base_len, cand_t;
  for (const ConvergeRun* b : bases) {
    for (std::size_t i = 0; i < b->curve.size(); ++i) lowest = std::min(lowest, smoothed_loss(b->curve, i, w));
    base_len.push_back(b->seconds);
  }
  if (!std::isfinite(lowest) || !(*std::max_element(cf.begin(), cf.end()) < lowest)) return;
  for (const ConvergeRun* k : cands)
    if (const Reached t = time_to_target(k->curve, lowest, w); t.reached() && t.seconds > 0) cand_t.push_back(t.seconds);
  if (cand_t.size() != cands.size() || !(mean_value(base_len) > 0)) return;
  cmp.late_target = lowest;
  cmp.late_ratio_min = mean_value(base_len) / mean_value(cand_t);
}

/// An arm from an lr-sweep against the arm its gain is relative to (`refs`: the baseline's runs, or the rule's arm's at
/// (b)'s batch), both from the user's start, to the loss the sweep timed its gain to: the samples each needed, paired by
/// data order (ConvergeComparison::sweep_measured). Samples, as the sweep counts: both arms train one config.
void time_at_sweep_loss(ConvergeComparison& cmp, const std::vector<const ConvergeRun*>& cands,
                        const std::vector<const ConvergeRun*>& refs, const ConvergeSummary& s) {
  if (!(cmp.sweep_loss > 0) || cands.empty() || refs.empty()) return;
  const std::int64_t w = comparison_window(*refs.front(), *cands.front(), s);
  std::vector<double> ref_samples, cand_samples;
  for (const ConvergeRun* k : cands) {
    if (k->status != "ok" || k->curve.empty()) continue;
    for (const ConvergeRun* b : refs) {
      if (b->data_order != k->data_order || b->status != "ok" || b->curve.empty()) continue;
      const Reached rb = time_to_target(b->curve, cmp.sweep_loss, w), rk = time_to_target(k->curve, cmp.sweep_loss, w);
      if (!rb.reached() || !rk.reached() || rk.samples <= 0) continue;
      ref_samples.push_back(static_cast<double>(rb.samples));
      cand_samples.push_back(static_cast<double>(rk.samples));
      const double x = ref_samples.back() / cand_samples.back();
      cmp.sweep_lo = cmp.sweep_orders == 0 ? x : std::min(cmp.sweep_lo, x);
      cmp.sweep_hi = cmp.sweep_orders == 0 ? x : std::max(cmp.sweep_hi, x);
      ++cmp.sweep_orders;
      break;
    }
  }
  if (cmp.sweep_orders > 0) cmp.sweep_measured = mean_value(ref_samples) / mean_value(cand_samples);
}

/// Each candidate against the baseline: measured time ratio to their target (with its interval), predicted ratio,
/// whether they agree, the implied noise scale, and a gain no noise scale explains.
void add_comparisons(ConvergeSummary& s, const std::vector<ConvergeRunMeta>& metas, bool target_given) {
  const ConvergeRun& base = s.runs.front();
  const std::vector<const ConvergeRun*> bases = baseline_runs(s);
  std::vector<double> base_rates;
  for (const ConvergeRun* b : bases) base_rates.push_back(b->samples_per_s);
  const std::int64_t B0 = s.user_batch > 0 ? s.user_batch : base.global_batch;
  const double spread = 1.96 * std::sqrt(2.0) * s.eps_time;  // a ratio of two runs, each ± ε
  for (int k = 0; k < static_cast<int>(s.runs.size()); ++k) {
    const ConvergeRun& c = s.runs[k];
    if (c.role != "candidate") continue;
    const std::vector<const ConvergeRun*> cands = arm_runs(s, k);
    std::vector<double> rates = {c.samples_per_s};
    for (std::size_t i = 1; i < cands.size(); ++i)
      if (cands[i]->status == "ok") rates.push_back(cands[i]->samples_per_s);
    ConvergeComparison cmp;
    cmp.run = k;
    cmp.picked = metas[k].picked;
    cmp.predicted_by_tune = metas[k].predicted_by_tune;
    cmp.lr_gain = metas[k].lr_gain;
    time_at_target(cmp, cands, bases, B0, target_given ? s.target_loss : 0, s);
    if (const int ref = metas[k].sweep_reference;
        metas[k].sweep_loss > 0 && ref >= 0 && ref < static_cast<int>(s.runs.size()) && ref != k) {
      cmp.sweep_loss = metas[k].sweep_loss;
      cmp.sweep_start = metas[k].sweep_start;
      cmp.sweep_reference = s.runs[ref].label;
      time_at_sweep_loss(cmp, cands, ref == 0 ? bases : arm_runs(s, ref), s);
    }
    time_at_end(cmp, cands, bases, s);
    if (!base_rates.empty() && mean_value(base_rates) > 0) cmp.throughput_ratio = mean_value(rates) / mean_value(base_rates);
    // A ramp's batch moves along the run: one efficiency does not price it, the tune's phase-by-phase prediction does.
    cmp.efficiency = c.ramp.empty() ? efficiency(c.global_batch, B0, s.noise_scale) : std::nan("");
    if (std::isfinite(cmp.efficiency) && cmp.lr_gain > 0) cmp.predicted = cmp.throughput_ratio * cmp.efficiency * cmp.lr_gain;
    else if (!c.ramp.empty()) cmp.predicted = cmp.predicted_by_tune;
    if (cmp.measured > 0) {
      cmp.measured_lo = cmp.measured * (1 - spread);
      cmp.measured_hi = cmp.measured * (1 + spread);
      for (double x : cmp.order_ratios) {
        cmp.measured_lo = std::min(cmp.measured_lo, x);
        cmp.measured_hi = std::max(cmp.measured_hi, x);
      }
      cmp.above_throughput = cmp.samples_ratio < 1 && cmp.measured > cmp.throughput_ratio && c.global_batch > B0 && c.ramp.empty();
    }
    if (cmp.measured > 0 && cmp.predicted > 0) {
      cmp.agreement = cmp.measured / cmp.predicted - 1;
      cmp.agrees = std::abs(cmp.agreement) <= 0.2 || (cmp.predicted >= cmp.measured_lo && cmp.predicted <= cmp.measured_hi);
    }
    s.comparisons.push_back(cmp);
  }
}

/// ε: how much the baseline itself moves on other data orders.
void add_run_to_run_spread(ConvergeSummary& s) {
  const ConvergeRun& base = s.runs.front();
  // ε: the baseline on its other data orders. Its loss at equal samples (where the baseline reached the target,
  // or the fewest samples any of them trained) and its time to the target.
  const std::vector<const ConvergeRun*> bases = baseline_runs(s);
  s.eps_runs = static_cast<int>(bases.size());
  if (bases.size() >= 2) {
    std::int64_t at = base.reached ? base.samples_to_target : base.curve.empty() ? 0 : base.curve.back().samples;
    for (const auto* b : bases) at = std::min(at, b->curve.back().samples);
    s.eps_samples = at;
    std::vector<double> losses, times;
    for (const auto* b : bases) {
      const double l = loss_at_samples(b->curve, at, s.smooth_samples);
      if (std::isfinite(l)) losses.push_back(l);
      if (b->reached) times.push_back(b->time_to_target);
    }
    s.eps_loss = relative_sd(losses);
    s.eps_time = times.size() == bases.size() ? relative_sd(times) : 0;
  }
}

}  // namespace

ConvergeSummary summarize_converge(const std::vector<TrialRecord>& records, const std::vector<ConvergeRunMeta>& metas,
                                   ConvergeSummary s) {
  s.runs.clear();
  s.comparisons.clear();
  const bool target_given = s.target_loss > 0;
  add_runs(s, records, metas);
  add_target(s);
  if (s.runs.empty()) return s;
  add_run_to_run_spread(s);  // ε first: each comparison's interval uses it
  add_comparisons(s, metas, target_given);
  add_held_out(s, records);
  return s;
}

namespace {

/// --from-run DIR: the tune run's baseline, setup, user batch and noise scale, and the candidates to compare.
std::vector<Planned> plan_from_run(ConvergeOptions& o, const ConvergeOptions& in, ConvergeSummary& h, Planned& base) {
  const RunSummary s = load_run_summary(o.from_run);
  const bool wants_pick = std::find(o.compare.begin(), o.compare.end(), "pick") != o.compare.end();
  // A run without a winner still has its answers (a changed batch, the ramp): only the pick needs one.
  if (s.baseline < 0 || (s.winner < 0 && wants_pick))
    throw UsageError(fmt::format("--from-run {}: the run has no {}; nothing to compare{}", o.from_run,
                                 s.baseline < 0 ? "baseline" : "winner",
                                 s.baseline < 0 ? "" : " (--compare changed-batch trains its answer (b), where it has one)"));
  Journal j((fs::path(o.from_run) / "journal.sqlite").string());
  TuneOptions t;
  options_from_json(json::parse(j.meta("options")), t);
  o.setup = t.setup;  // the run's workload, data, seed, model and learning rate
  if (in.setup.lr > 0) o.setup.lr = in.setup.lr;
  base.config = s.configs[s.baseline].config;
  h.from_run = o.from_run;
  h.user_batch = s.user_batch > 0 ? s.user_batch : s.configs[s.baseline].global_batch;
  if (s.noise_scale.measured) {
    h.noise_scale = s.noise_scale.value;
    h.noise_lo = s.noise_scale.lo;
    h.noise_hi = s.noise_scale.hi;
    h.noise_basis = s.noise_scale.over_run
                        ? fmt::format("the tune run's noise-scale trial along its run ({} windows, B ∝ samples^{:.2f}), averaged over {}",
                                      s.noise_scale.windows.size(), s.noise_scale.growth.exponent, s.noise_scale.run_basis)
                        : fmt::format("the tune run's noise-scale trial ({} steps, {})", s.noise_scale.steps,
                                      s.noise_scale.early ? "early training from random weights" : "from the user's weights");
  }
  std::vector<Planned> plan = candidates_of_run(s, o.compare);
  if (plan.empty())
    throw UsageError(wants_pick && o.compare.size() == 1
                         ? fmt::format("--from-run {}: its pick is the baseline itself; nothing to compare", o.from_run)
                         : fmt::format("--from-run {}: the run has none of --compare {} other than its baseline; nothing to "
                                       "compare (its report says which answers it has)",
                                       o.from_run, fmt::join(o.compare, ",")));
  return plan;
}

/// The arm an lr-sweep's verdict names against the user's rate: its best rate, predicted at the sweep's gain; or — the
/// user's about right — the runner-up (the lowest loss of the other rates that trained): predicted at 1 when the sweep
/// found it within the spread of the user's (it was the best, by less than the spread), unpredicted (lr_gain 0) when the
/// user's own was the best (the sweep measured it slower, but timed no ratio: it never reached the user's loss).
Planned sweep_arm(const json& doc, const std::string& dir) {
  const json& v = doc.at("verdict");
  const std::string verdict = v.at("verdict").get<std::string>();
  Planned p;
  p.meta.role = "candidate";
  // The loss the sweep timed its gains to (its reference rate's at the horizon) and where its arms started, so that
  // converge times the same loss from the user's start (ConvergeComparison::sweep_loss).
  for (const json& a : doc.at("arms"))
    if (same_lr_multiple(a.at("multiple").get<double>(), 1) && a.value("status", "") == "ok" && a.at("loss").is_number())
      p.meta.sweep_loss = a.at("loss").get<double>();
  if (doc.contains("burn_in") && doc["burn_in"].is_object() && !doc["burn_in"].value("diverged", false) && doc.contains("horizon"))
    p.meta.sweep_start = doc["horizon"].value("burn_in_samples", std::int64_t{0});  // 0: its arms started at the user's start
  if ((verdict == "too low" || verdict == "too high") && v.value("gain", 0.0) > 0) {
    p.fixed_lr = v.at("best_lr").get<double>();
    p.meta.lr_gain = v.at("gain").get<double>();
    p.meta.label = "the sweep's best rate";
    return p;
  }
  if (verdict == "about right") {
    double best_loss = std::numeric_limits<double>::infinity();
    for (const json& a : doc.at("arms"))
      if (a.value("status", "") == "ok" && !same_lr_multiple(a.at("multiple").get<double>(), 1) && a.at("loss").is_number() &&
          a.at("loss").get<double>() < best_loss) {
        best_loss = a.at("loss").get<double>();
        p.fixed_lr = a.at("lr").get<double>();
      }
    if (p.fixed_lr > 0) {
      const bool within = !same_lr_multiple(v.at("best_multiple").get<double>(), 1);  // it was the best, within the spread
      p.meta.label = within ? "the sweep's best rate, within its spread of yours" : "the sweep's runner-up rate";
      p.meta.lr_gain = within ? 1 : 0;
      return p;
    }
  }
  throw UsageError(fmt::format(
      "--from-sweep {}: its verdict is \"{}\"{}; converge needs your rate to train to a loss and another rate the sweep "
      "trained (a verdict of too low, about right, or too high with your rate finite)",
      dir, verdict, verdict == "too high" ? " with your rate diverging (train at its best rate as yours instead)" : ""));
}

/// The sweep's trial at its ×1 rate from the user's start: its burn-in (from a checkpoint), else the ×1 arm on data
/// order 0 (every arm from the start: its setup carries no checkpoint, only the user's own start).
const TrialPlan& user_start_plan(const std::vector<TrialRecord>& trials, const json& doc, const std::string& dir) {
  std::int64_t id = doc.value("burn_in_trial", std::int64_t{0});
  if (id <= 0 && doc.contains("runs"))
    for (const json& r : doc.at("runs"))
      if (same_lr_multiple(r.value("multiple", 0.0), 1) && r.value("data_order", std::int64_t{-1}) == 0) id = r.value("trial", std::int64_t{0});
  for (const TrialRecord& t : trials)
    if (t.id == id) return t.plan;
  throw UsageError(fmt::format("--from-sweep {}: its journal holds no trial at its ×1 rate from the start (trial {})", dir, id));
}

/// --from-sweep DIR: the sweep's config and trial setup (its burn-in's plan: workload, data, seed, the user's rate) as
/// the baseline, and the rate its verdict names as the one candidate.
std::vector<Planned> plan_from_sweep(ConvergeOptions& o, const ConvergeOptions& in, ConvergeSummary& h, Planned& base) {
  const fs::path dir(o.from_sweep), report = dir / "lr-sweep.json", jp = dir / "journal.sqlite";
  if (!fs::exists(report) || !fs::exists(jp))
    throw UsageError(fmt::format("--from-sweep {}: not an lr-sweep folder (it needs lr-sweep.json and journal.sqlite)", o.from_sweep));
  if (in.setup.lr > 0)
    throw UsageError(fmt::format("--from-sweep {}: --lr is not allowed with it (the sweep's own rates are trained)", o.from_sweep));
  json doc;
  try {
    doc = json::parse(read_file(report.string()));
    if (doc.value("schema", "") != "autotune.lr-sweep/1") throw std::runtime_error("schema is not autotune.lr-sweep/1");
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("--from-sweep {}: unreadable lr-sweep.json: {}", o.from_sweep, e.what()));
  }
  const std::vector<TrialRecord> trials = Journal(jp.string()).trials();
  if (trials.empty()) throw UsageError(fmt::format("--from-sweep {}: its journal holds no trial", o.from_sweep));
  const TrialPlan& burn_in = user_start_plan(trials, doc, o.from_sweep);  // at the sweep's ×1, from the user's start
  o.setup = burn_in.setup;
  o.setup.data_order = 0;
  base.config = burn_in.config;
  if (o.smooth_samples == 0) o.smooth_samples = doc.value("smooth_samples", std::int64_t{0});
  if (in.baseline_samples < 0) o.baseline_samples = std::llround(doc.value("run_samples", 0.0));  // the run it was swept for
  h.from_sweep = o.from_sweep;
  h.user_batch = doc.value("global_batch", std::int64_t{0});
  Planned arm = sweep_arm(doc, o.from_sweep);
  if (doc.value("at", std::string()) != "changed-batch") {
    arm.config = base.config;
    return {arm};
  }
  // A sweep of the tune run's answer (b) around the batch rule's rate: the run's baseline at the user's own rate (its
  // noise scale too), (b) at the rule's rate as the sweep centred it, and (b) at the sweep's best.
  o.from_run = doc.at("from_run").get<std::string>();
  o.compare = {"changed-batch"};
  std::vector<Planned> plan = plan_from_run(o, in, h, base);
  o.setup = burn_in.setup;  // trained at the rule's rate: back to the user's own for the baseline
  o.setup.data_order = 0;
  const double to_yours = doc.at("your_lr").get<double>() / doc.at("user_lr").get<double>();
  if (o.setup.lr_scale > 0) o.setup.lr_scale *= to_yours;
  else o.setup.lr *= to_yours;
  plan.front().fixed_lr = doc.at("user_lr").get<double>();
  plan.front().meta.label = "changed batch at the batch rule's rate";
  arm.config = plan.front().config;
  arm.meta.label = "changed batch at " + arm.meta.label.substr(arm.meta.label.find("the sweep's"));
  arm.meta.sweep_reference = 1;  // the rule's arm, plan.front(): runs[1] (ordered_runs puts the baseline first)
  plan.push_back(arm);
  return plan;
}

/// The runs in order: the baseline, each candidate (its learning rate scaled to its batch), then the baseline on
/// other data orders (ε).
std::vector<Planned> ordered_runs(const Planned& base_in, const std::vector<Planned>& plan, const ConvergeOptions& o,
                                  const ConvergeSummary& h) {
  Planned base = base_in;
  const double lr = trained_lr(o.setup, h.workload);
  const std::string& family = h.workload.optimizer_family;
  base.lr = lr;
  std::vector<Planned> runs = {base};
  for (auto p : plan) {
    const std::int64_t B = global_batch_of(p.config, h.workload);
    p.lr = p.fixed_lr > 0 ? p.fixed_lr : scaled_lr(lr, B, h.user_batch, h.noise_scale, family);
    if (!p.ramp.empty()) {  // each phase at the run's lr × √(its gain); the SDE rule does not apply to a schedule
      for (auto& ph : p.ramp) {
        Config c = p.config;
        c.set("grad_accum", std::to_string(ph.grad_accum));
        if (!p.hand_lr) ph.lr = lr_at_gain(lr, ph.lr, family);
        else if (!(ph.lr > 0)) ph.lr = scaled_lr(lr, global_batch_of(c, h.workload), h.user_batch, h.noise_scale, family);
      }
      p.lr = p.ramp.front().lr;
      runs.push_back(p);
      continue;
    }
    if (o.adam_rule == "sde" && B != h.user_batch && h.user_batch > 0) {  // Adam's SDE scaling rule, κ = B/B0
      const double kappa = static_cast<double>(B) / static_cast<double>(h.user_batch);
      p.beta1 = std::clamp(1 - kappa * (1 - o.setup.beta1()), 1e-6, 0.999999);
      p.beta2 = std::clamp(1 - kappa * (1 - o.setup.beta2()), 1e-6, 0.999999);
      p.eps = o.setup.eps() / std::sqrt(kappa);
    }
    runs.push_back(p);
  }
  for (int k = 1; k <= o.reruns; ++k) {
    Planned r = base;
    r.data_order = k;
    r.meta = {fmt::format("baseline, data order {}", k), "rerun", 0, false};
    runs.push_back(r);
  }
  const size_t candidates = runs.size() - 1 - static_cast<size_t>(o.reruns);
  for (int k = 1; k < o.arm_orders; ++k)  // each candidate on other data orders: an interval of its own
    for (size_t i = 1; i <= candidates; ++i) {
      Planned r = runs[i];
      r.data_order = k;
      r.meta = {fmt::format("{}, data order {}", runs[i].meta.label, k), "candidate-rerun", 0, false};
      runs.push_back(r);
    }
  return runs;
}

/// Run `i` of `runs`, trained to the target or for its seconds, journaled, with its progress line.
TrialRecord converge_trial(const std::vector<Planned>& runs, std::size_t i, const ConvergeOptions& o, const ConvergeSummary& h,
                           const TrialRunner& runner, Journal& journal, std::ostream& progress) {
  const Config& base_config = runs.front().config;
  TrialPlan p;
  p.setup = o.setup;
  p.setup.data_order = runs[i].data_order;
  set_trained_lr(p.setup, h.workload, runs[i].lr);
  if (runs[i].beta1 > 0) p.setup.adam_beta1 = runs[i].beta1;
  if (runs[i].beta2 > 0) p.setup.adam_beta2 = runs[i].beta2;
  if (runs[i].eps > 0) p.setup.adam_eps = runs[i].eps;
  p.config = runs[i].config;
  p.converge.on = true;
  p.converge.max_seconds = o.seconds;
  p.converge.target_loss = o.target_loss;
  if (h.baseline_samples > 0 && baseline_role(runs[i].meta.role))
    p.converge.max_samples = h.baseline_samples;  // the user's run: its final loss is the common target
  p.converge.smooth_samples = h.smooth_samples;
  p.converge.ramp = runs[i].ramp;
  p.converge.val_every = h.held_out.every;
  p.converge.val_samples = o.val_samples;
  p.converge.val_data = o.val_data;
  p.converge.val_needed = o.val_every > 0 || !o.val_data.empty();
  if (i == 0 && !o.save.empty()) p.converge.save_checkpoint = fs::absolute(o.save).string();
  TrialRecord rec = runner.run(p, TrialKind::converge, static_cast<int>(i) + 1);
  rec.id = journal.append(rec);
  const auto& r = rec.result;
  const std::string how =
      r.status == TrialStatus::ok && r.converge && !r.converge->points.empty()
          ? fmt::format("{} samples in {:.1f} s ({} samples/s), smoothed loss {:.4f}, lr {:.3g}{}",
                        with_commas(static_cast<double>(r.converge->points.back().samples)), r.converge->points.back().seconds,
                        with_commas(r.converge->points.back().samples / std::max(1e-9, r.converge->points.back().seconds)),
                        smoothed_loss(r.converge->points, r.converge->points.size() - 1, h.smooth_samples), runs[i].lr,
                        runs[i].beta2 > 0 ? fmt::format(", β1 {:.3g} β2 {:.4g} ε {:.3g}", runs[i].beta1, runs[i].beta2, runs[i].eps) : "")
          : fmt::format("{}: {}", to_string(r.status), r.message);
  progress << fmt::format("[{}/{}] {}: {} — {}\n", i + 1, runs.size(), runs[i].meta.label,
                          change_from(runs[i].config, base_config, runs[i].lr, runs.front().lr), how)
           << std::flush;
  return rec;
}

/// The held-out cadence (ConvergeSummary::held_out.every): the one given, else the default where there is held-out data
/// (--val-data, or the task's own as describe found it), said before the runs; refused in one line where it cannot be.
void plan_held_out(const ConvergeOptions& o, ConvergeSummary& h, std::ostream& progress) {
  h.held_out.every = o.val_every >= 0 ? o.val_every
                     : !o.val_data.empty() || !h.workload.held_out.empty() ? default_held_out_every(h.smooth_samples)
                                                                            : 0;
  check_val_data_worker(o.val_data, h.workload);
  if (o.val_every > 0 && o.val_data.empty() && h.workload.held_out.empty())
    throw UsageError(fmt::format("--val-every {}: there is no held-out data; give --val-data (in --data's form) or a task "
                                 "with val_dataset() (a LightningModule: val_dataloader())",
                                 o.val_every));
  if (h.held_out.every > 0)
    progress << fmt::format("held-out loss: {}, the first {} samples every {} samples trained (its time is not training "
                            "time)\n",
                            o.val_data.empty() ? h.workload.held_out : "--val-data " + o.val_data,
                            with_commas(static_cast<double>(o.val_samples)),
                            with_commas(static_cast<double>(h.held_out.every)))
             << std::flush;
}

/// The options that are wrong before anything is read: an --out that holds something, a --save that exists, nothing to
/// compare, --from-sweep beside another source.
void check_options(const ConvergeOptions& o) {
  if (fs::exists(o.out_dir) && !fs::is_empty(o.out_dir))
    throw UsageError(fmt::format("{} already exists and is not empty; choose another --out (nothing is overwritten)", o.out_dir));
  if (!o.save.empty() && fs::exists(o.save))
    throw UsageError(fmt::format("--save {}: already exists; a weights file is never overwritten (choose another path)", o.save));
  if (o.from_run.empty() && o.from_sweep.empty() && o.candidates.empty() && o.hand_ramp.empty())
    throw UsageError(
        "nothing to compare: give --from-run DIR (a tune run), --from-sweep DIR (an lr-sweep), --candidate-set knob=value or "
        "--ramp-phases");
  if (!o.from_sweep.empty() && (!o.from_run.empty() || !o.candidates.empty() || !o.hand_ramp.empty()))
    throw UsageError("--from-sweep trains the sweep's config at two rates; it does not combine with --from-run, "
                     "--candidate-set or --ramp-phases");
  if (o.val_every == 0 && !o.val_data.empty())
    throw UsageError(fmt::format("--val-data {} with --val-every 0: the held-out data would never be evaluated; leave "
                                 "--val-every out (default: every 2 smoothing windows) or give it a number of samples",
                                 o.val_data));
}

}  // namespace

ConvergeSummary run_converge(const ConvergeOptions& in, std::ostream& progress) {
  ConvergeOptions o = in;
  if (o.worker.empty()) o.worker = default_worker_path(o.setup);
  if (o.out_dir.empty()) o.out_dir = default_out_dir();
  check_options(o);

  ConvergeSummary h;
  std::vector<Planned> plan;
  Planned base;
  base.meta = {"baseline", "baseline", 0, false};
  if (!o.from_run.empty()) {
    plan = plan_from_run(o, in, h, base);
    // The worker of the run's own model (a Python model or task: the Python worker), unless --worker named one.
    if (in.worker.empty()) o.worker = default_worker_path(o.setup);
  } else if (!o.from_sweep.empty()) {
    plan = plan_from_sweep(o, in, h, base);
    if (in.worker.empty()) o.worker = default_worker_path(o.setup);
  } else {
    base.config = o.baseline;
    int n = 0;
    for (const auto& c : o.candidates) {
      Planned p;
      p.config = c;
      p.meta = {fmt::format("candidate {}", ++n), "candidate", 0, false};
      plan.push_back(p);
    }
  }
  if (!o.hand_ramp.empty()) plan.push_back(hand_ramp_arm(base.config, o.hand_ramp));
  if (o.noise_scale > 0) {
    h.noise_scale = o.noise_scale;
    h.noise_lo = o.noise_scale;
    h.noise_hi = o.noise_scale;
    h.noise_basis = "given (--noise-scale)";
  }
  const std::string task = task_of(o.setup.model);  // a task file's dataset() may be its data
  if (o.setup.data.empty() && task.empty())
    throw UsageError("autotune converge trains on your data: pass --data, a --task whose dataset() is the data, or a "
                     "--from-run tuned with either; a synthetic pool is memorised, so its loss curve says nothing about the "
                     "time to train");
  validate(o.setup);
  h.workload = describe_workload(o.worker, o.setup);  // checks the data and --init-from before anything runs
  if (o.setup.data.empty() && !h.workload.task_data)
    throw UsageError(fmt::format("autotune converge trains on your data: the task {} has no dataset() (its batches are "
                                 "random, drawn from the batch spec); add a dataset() to it",
                                 task));
  h.env = query_environment(o.worker);
  h.data = o.setup.data.empty() ? h.workload.python_task + " dataset()" : o.setup.data;
  if (h.user_batch == 0) h.user_batch = global_batch_of(base.config, h.workload);
  std::int64_t biggest = global_batch_of(base.config, h.workload);
  for (const auto& p : plan) {
    biggest = std::max(biggest, global_batch_of(p.config, h.workload));
    for (const auto& ph : p.ramp) {  // a ramp's biggest phase
      Config c = p.config;
      c.set("grad_accum", std::to_string(ph.grad_accum));
      biggest = std::max(biggest, global_batch_of(c, h.workload));
    }
  }
  h.smooth_samples = o.smooth_samples > 0 ? o.smooth_samples : default_smoothing_window(biggest);
  h.smooth_given = o.smooth_samples > 0;
  plan_held_out(o, h, progress);
  h.seconds_per_run = o.seconds;
  h.baseline_samples = o.baseline_samples > 0 && o.target_loss <= 0 ? o.baseline_samples : 0;
  if (o.adam_rule != "none" && o.adam_rule != "sde")
    throw UsageError(fmt::format("--adam-rule '{}' is not allowed; allowed: none, sde", o.adam_rule));
  h.adam_rule = o.adam_rule;
  h.target_loss = o.target_loss;
  h.started_at = utc_now_iso8601();

  const std::vector<Planned> runs = ordered_runs(base, plan, o, h);
  std::vector<ConvergeRunMeta> metas;
  for (const auto& r : runs) metas.push_back(r.meta);

  fs::create_directories(fs::path(o.out_dir) / "trials");
  Journal journal((fs::path(o.out_dir) / "journal.sqlite").string());
  journal.set_meta(kMetaKey, header_json(h, metas).dump());
  const TrialRunner runner(RunnerOptions(o.worker, (fs::path(o.out_dir) / "trials").string())
                               .timeout_seconds(o.trial_timeout_seconds > 0 ? o.trial_timeout_seconds : 3 * o.seconds + 120));
  std::vector<TrialRecord> done;
  for (size_t i = 0; i < runs.size(); ++i) done.push_back(converge_trial(runs, i, o, h, runner, journal, progress));
  ConvergeSummary s = summarize_converge(done, metas, h);
  s.out_dir = o.out_dir;
  s.finished_at = utc_now_iso8601();
  journal.set_meta("finished_at", s.finished_at);
  write_converge_reports(s, o.out_dir);
  // Calibration by training: the noise scale these runs imply, written beside the tune run they came from, so that its
  // report and a resumed tune price with it (tuner/pricing/calibration.h).
  if (!o.from_run.empty() && o.from_sweep.empty()) {  // an arm at a swept rate is not the batch's doing
    if (const auto c = calibration_from(s, o.setup.model))
      progress << fmt::format("calibration: the changed batches imply B̄ = {} (geometric mean of {} arm{}); written to {} — "
                              "`autotune report {}` and a resumed tune price with it\n",
                              with_commas(c->noise_scale), c->arms.size(), c->arms.size() == 1 ? "" : "s",
                              write_calibration(o.from_run, *c), o.from_run);
    else
      progress << "calibration: no changed batch's samples imply a noise scale (each needed fewer samples than the baseline, "
                  "or more than its batch's multiple of them, which no noise scale gives); the tune run is left as it was\n";
  }
  return s;
}

bool is_converge_run(const std::string& dir) {
  const fs::path jp = fs::path(dir) / "journal.sqlite";
  if (!fs::exists(jp)) return false;
  return !Journal(jp.string()).meta(kMetaKey).empty();
}

ConvergeSummary load_converge_summary(const std::string& dir) {
  Journal j((fs::path(dir) / "journal.sqlite").string());
  const std::string meta = j.meta(kMetaKey);
  if (meta.empty()) throw UsageError(fmt::format("{}: not a converge run (its journal has no converge header)", dir));
  std::vector<ConvergeRunMeta> metas;
  ConvergeSummary h;
  try {
    h = header_from_json(json::parse(meta), metas);
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("{}: unreadable converge header: {}", dir, e.what()));
  }
  ConvergeSummary s = summarize_converge(j.trials(), metas, h);
  s.finished_at = j.meta("finished_at");
  return s;
}

std::vector<std::string> write_converge_reports(const ConvergeSummary& s, const std::string& dir) {
  const fs::path d(dir);
  std::vector<std::string> paths = {(d / "converge.md").string(), (d / "converge.html").string(), (d / "converge.json").string()};
  write_file_atomic(paths[0], render_converge_markdown(s));
  write_file_atomic(paths[1], render_converge_html(s));
  write_file_atomic(paths[2], render_converge_json(s).dump(2) + "\n");
  return paths;
}

}  // namespace autotune
