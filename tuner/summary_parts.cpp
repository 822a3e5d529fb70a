#include "tuner/summary_parts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "knobs/knob.h"
#include "reports/markdown.h"
#include "tuner/ranking.h"
#include "tuner/stability.h"
#include "tuner/statistics.h"

namespace autotune {

namespace {

/// The windows of every confirmation run of `c`, pooled; empty when none ran or any run failed.
std::vector<double> confirmation_windows(const RecordIndex& index, const Config& c) {
  std::vector<double> t;
  for (const auto* r : index.confirms(c)) {
    if (r->result.status != TrialStatus::ok) return {};
    for (double x : r->result.throughputs()) t.push_back(x);
  }
  return t;
}

/// The median window throughput of one confirmation run; 0 when it failed or measured nothing.
double run_median(const TrialRecord* r) {
  return r->result.status == TrialStatus::ok && !r->result.throughputs().empty() ? median(r->result.throughputs()) : 0.0;
}

/// Index of `c` in `configs`, -1 when absent.
int position(const std::vector<ConfigSummary>& configs, const Config& c) {
  for (size_t j = 0; j < configs.size(); ++j)
    if (configs[j].config == c) return static_cast<int>(j);
  return -1;
}

/// How much a config's throughput moves from one fresh process to the next (log units): the pooled
/// standard deviation of log(median of a run) over the confirmation runs of `configs` that ran at least
/// twice, and its degrees of freedom. Only confirmation runs: fresh, interleaved, none chosen for being
/// fast (a search run is the luckiest draw of its config when it leads). {0, 0} when no config has two
/// successful runs.
struct RunSpread {
  double sigma = 0;
  int dof = 0;
};
RunSpread run_to_run_spread(const RecordIndex& index, const std::vector<Config>& configs) {
  double ss = 0;
  int dof = 0;
  for (const Config& c : configs) {
    std::vector<double> logs;
    for (const auto* r : index.confirms(c))
      if (const double m = run_median(r); m > 0) logs.push_back(std::log(m));
    if (logs.size() < 2) continue;
    double mean = 0;
    for (double x : logs) mean += x / static_cast<double>(logs.size());
    for (double x : logs) ss += (x - mean) * (x - mean);
    dof += static_cast<int>(logs.size()) - 1;
  }
  return dof > 0 ? RunSpread{std::sqrt(ss / dof), dof} : RunSpread{};
}

/// Whether `c` outran every other config of the confirmation in each interleaved round it ran (round r =
/// each config's r-th confirmation run; at least 2 rounds, each with a config to beat), and by how much
/// at least (its run median ÷ the fastest other run median of that round, minus 1). Side by side in
/// fresh processes, round after round, is the comparison the winner is chosen on; a search number that
/// overstated such a candidate (the leader's search run is its luckiest draw) does not make it slower.
struct RoundLead {
  bool held = false;
  int rounds = 0;
  double margin = 0;
};
RoundLead round_lead(const RecordIndex& index, const Config& c, const std::vector<Config>& rounds_of) {
  const auto& mine = index.confirms(c);
  RoundLead lead;
  lead.margin = std::numeric_limits<double>::infinity();
  for (size_t r = 0; r < mine.size(); ++r) {
    const double m = run_median(mine[r]);
    double fastest_other = 0;
    for (const Config& o : rounds_of)
      if (!(o == c) && index.confirms(o).size() > r) fastest_other = std::max(fastest_other, run_median(index.confirms(o)[r]));
    if (m <= 0 || fastest_other <= 0 || m <= fastest_other) return RoundLead{};
    lead.margin = std::min(lead.margin, m / fastest_other - 1);
    ++lead.rounds;
  }
  lead.held = lead.rounds >= 2;
  return lead.held ? lead : RoundLead{};
}

/// A candidate confirms when its speedup over the baseline reproduces: the 95% CI of (candidate ÷
/// baseline) in the interleaved rounds overlaps the same ratio's CI in the search, or the two ratios
/// differ by less than the run-to-run spread allows. The search's CI comes from the windows of one
/// process per side and so leaves out how much a whole process moves (`spread`, run_to_run_spread): on
/// a quiet host (window spread 0.5%, runs 1% apart) the fastest config's search number is its luckiest
/// draw, and a CI test alone rejected it as "not reproduced" and crowned a config 7.5% slower. The ratios'
/// log difference has variance sigma² (2 + 1/R + 1/Rb) (one process per side in the search, R and Rb in
/// the rounds); sigma is estimated from few runs, so the bound is Student's t (dof of the estimate)
/// times its square root. Ratios cancel drift that slows the whole machine between search and
/// confirmation; absolute numbers do not. A candidate that outran every other config in each round
/// (`lead`, round_lead) confirms as well, whatever its search number claimed. `v` becomes the candidate
/// as measured in the confirmation.
Confirmation confirm_candidate(ConfigSummary& v, bool is_baseline, const ConfigSummary& base,
                               const std::vector<double>& base_confirm, const RecordIndex& index, RunSpread spread,
                               RoundLead lead) {
  const std::vector<double> pooled = confirmation_windows(index, v.config);
  const auto& runs = index.confirms(v.config);
  Confirmation conf;
  conf.ran = !runs.empty();
  conf.trial_id = runs.empty() ? 0 : runs.back()->id;
  if (pooled.empty()) {
    conf.detail = conf.ran ? "a confirmation run failed" : "not run (budget)";
    v.eligible = !conf.ran;  // a failed re-run disqualifies; an un-run one keeps its search numbers
    return conf;
  }
  conf.median = median(pooled);
  const Interval ci = bootstrap_median_ci(pooled);
  conf.ci_lo = ci.lo;
  conf.ci_hi = ci.hi;
  const std::string absolute = fmt::format("{} samples/s [{}, {}] in {} fresh interleaved run(s) vs {} [{}, {}] in the search",
                                           with_commas(conf.median), with_commas(conf.ci_lo), with_commas(conf.ci_hi),
                                           runs.size(), with_commas(v.median), with_commas(v.ci_lo), with_commas(v.ci_hi));
  if (!is_baseline && !base_confirm.empty() && base.status == TrialStatus::ok) {
    const Interval now = bootstrap_ratio_ci(pooled, base_confirm);
    const Interval then = bootstrap_ratio_ci(v.throughputs, base.throughputs);
    const double ratio_now = conf.median / median(base_confirm), ratio_then = v.median / base.median;
    const double rounds = static_cast<double>(runs.size()), base_rounds = static_cast<double>(index.confirms(base.config).size());
    const double sigma = spread.sigma;
    const double tolerance =
        t_quantile_975(spread.dof) * sigma * std::sqrt(2.0 + 1.0 / rounds + 1.0 / std::max(1.0, base_rounds));
    const double allowed_pct = 100 * (std::exp(tolerance) - 1);  // the tolerance as a ± on the ratio
    // Faster than the search claimed (the whole CI above) confirms too: the claim was conservative.
    const bool exceeded = now.lo > then.hi;
    const bool overlap = now.overlaps(then);
    const bool within_spread = std::abs(std::log(ratio_now / ratio_then)) <= tolerance;
    conf.confirmed = overlap || exceeded || within_spread || lead.held;
    const std::string beyond =
        sigma > 0 ? fmt::format(" (beyond the run-to-run spread: {:.1f}% per run, ±{:.1f}%)", 100 * sigma, allowed_pct) : "";
    const std::string how =
        exceeded  ? "exceeded"
        : overlap ? "reproduced"
        : within_spread
            ? fmt::format("reproduced within the run-to-run spread ({:.1f}% per run: ±{:.1f}%)", 100 * sigma, allowed_pct)
        : lead.held ? fmt::format("the search overstated it{}, but it outran every other config in each of its {} "
                                  "interleaved rounds (by ≥ {:.1f}%): confirmed on the rounds' numbers",
                                  beyond, lead.rounds, 100 * lead.margin)
                    : "not reproduced" + beyond;
    conf.detail = fmt::format("{:.2f}× the baseline [{:.2f}, {:.2f}] interleaved vs {:.2f}× [{:.2f}, {:.2f}] in the search — {}; {}",
                              ratio_now, now.lo, now.hi, ratio_then, then.lo, then.hi, how, absolute);
  } else {  // the baseline itself, or no baseline runs to compare with: absolute CIs
    conf.confirmed = ci.overlaps({v.ci_lo, v.ci_hi});
    if (is_baseline && !conf.confirmed) {
      // The reference of every ratio: a move here is the machine's (drift), and the ratios, taken within the
      // same rounds, cancel it. Not a reason to distrust the baseline.
      conf.confirmed = true;
      conf.detail = fmt::format("{} — moved {:+.1f}% since the search: the machine drifted; every ratio is taken within "
                                "the same interleaved rounds, which cancels it",
                                absolute, 100 * (conf.median / v.median - 1));
    } else {
      conf.detail = fmt::format("{} — {}", absolute, conf.confirmed ? "95% CIs overlap" : "95% CIs do not overlap: not reproduced");
    }
  }
  v.median = conf.median;
  v.ci_lo = conf.ci_lo;
  v.ci_hi = conf.ci_hi;
  v.throughputs = pooled;
  return conf;
}

/// Config `j` ÷ the baseline in samples/s: from the interleaved confirmation runs when both ran fine
/// (same conditions, same time), else from the search runs.
struct Ratio {
  double value = 0, lo = 0, hi = 0;
  std::string basis;
};
Ratio ratio_to_baseline(const RunSummary& summary, const SummaryInput& in, int j, const char* label) {
  const ConfigSummary& c = summary.configs[j];
  const ConfigSummary& base = summary.configs[summary.baseline];
  const auto cc = confirmation_windows(in.index, c.config), bc = confirmation_windows(in.index, base.config);
  std::vector<double> num = c.throughputs, den = base.throughputs;
  Ratio r;
  r.basis = "search runs";
  if (!cc.empty() && !bc.empty()) {
    num = cc;
    den = bc;
    r.basis = fmt::format("interleaved confirmation runs ({} {} vs baseline {} samples/s, same rounds)", label,
                          with_commas(median(cc)), with_commas(median(bc)));
  }
  if (base.status == TrialStatus::ok && median(den) > 0 && !num.empty()) {
    r.value = median(num) / median(den);
    const Interval ci = bootstrap_ratio_ci(num, den);
    r.lo = ci.lo;
    r.hi = ci.hi;
  }
  return r;
}

/// The time objective's two answers (tuner/ranking.h): (a) the best confirmed config at the user's global
/// batch, (b) the best at another batch — priced by predicted time to the same loss when the noise scale is
/// usable, else only listed by throughput. The winner is (b) only when it beats (a) across the whole band
/// of noise scales; `pool` holds the confirmed candidates as measured in the confirmation, `all` every candidate
/// the confirmation ran. Answer (a) comes from the pool, else from every candidate at the user's batch (a host that
/// drifted between search and confirmation can leave even the baseline "not reproduced"), else from the search.
void decide_between_answers(RunSummary& summary, const SummaryInput& in, const std::vector<ConfigSummary>& pool,
                            const std::vector<ConfigSummary>& all) {
  const Objective& o = in.history.objective();
  const auto& configs = summary.configs;
  std::vector<ConfigSummary> at_user, other;
  for (const ConfigSummary& c : pool) (o.at_user_batch(c) ? at_user : other).push_back(c);
  if (at_user.empty())
    for (const ConfigSummary& c : all)
      if (o.at_user_batch(c)) at_user.push_back(c);
  if (at_user.empty())
    for (const ConfigSummary& c : configs)
      if (o.at_user_batch(c) && c.phase != "ablation") at_user.push_back(c);
  // (b) likewise: a changed batch the confirmation did not re-run is still priced, on its search numbers.
  if (other.empty())
    for (const ConfigSummary& c : all)
      if (!o.at_user_batch(c)) other.push_back(c);
  if (other.empty())
    for (const ConfigSummary& c : configs)
      if (!o.at_user_batch(c) && c.phase != "ablation") other.push_back(c);
  std::string unused;
  if (const int a = choose_winner(at_user, in.ctx.defaults, unused, o); a >= 0)
    summary.answer_a = position(configs, at_user[a].config);
  const double lr = in.ctx.opts.setup.learning_rate();
  if (!o.by_time()) {
    summary.time_note = o.noise().why_not;
    // (b) unranked: the fastest stable config at another batch, by samples/s, for the reader to weigh.
    int b = -1;
    for (int j = 0; j < static_cast<int>(configs.size()); ++j)
      if (configs[j].eligible && configs[j].global_batch != o.user_batch() && configs[j].phase != "ablation" &&
          (b < 0 || configs[j].median > configs[b].median))
        b = j;
    if (b >= 0) {
      summary.answer_b.config = b;
      summary.answer_b.global_batch = configs[b].global_batch;
      if (summary.answer_a >= 0 && configs[summary.answer_a].median > 0)
        summary.answer_b.throughput_ratio = configs[b].median / configs[summary.answer_a].median;
      summary.answer_b.basis = "search runs (not confirmed: a changed batch is not ranked without a usable noise scale)";
    }
  } else if (const int b = choose_winner(other, in.ctx.defaults, unused, o); b >= 0) {
    const int bj = position(configs, other[b].config);
    if (summary.answer_a >= 0) {
      const ConfigSummary* a = nullptr;
      for (const ConfigSummary& c : at_user)
        if (c.config == configs[summary.answer_a].config) a = &c;
      // Both from the interleaved confirmation when both ran there, else both from the search: never one of each.
      const bool both_confirmed = !in.index.confirms(other[b].config).empty() && a && !in.index.confirms(a->config).empty();
      summary.answer_b = both_confirmed ? price_changed_batch(o, bj, other[b].global_batch, other[b].median, a->median)
                                        : price_changed_batch(o, bj, other[b].global_batch, configs[bj].median,
                                                              configs[summary.answer_a].median);
      summary.answer_b.basis = both_confirmed ? "the interleaved confirmation runs of both" : "search runs";
    } else {
      summary.answer_b.config = bj;
      summary.answer_b.global_batch = other[b].global_batch;
    }
    summary.answer_b.lr = lr_advice(o, other[b].global_batch, lr);
  }
  // The winner at another batch must beat (a) across the band of noise scales, not only at the estimate; a changed
  // batch that could not be priced against (a) is never the pick.
  if (summary.winner >= 0 && !o.at_user_batch(configs[summary.winner])) {
    const TimeAnswer& b = summary.answer_b;
    if (summary.answer_a < 0) {
      summary.winner_note = "no stable config at your batch to compare a changed batch with: nothing is picked";
      summary.winner = -1;
    } else if (b.config != summary.winner || !b.beats_a) {
      summary.winner_note = fmt::format(
          "{} (global batch {}) is predicted {:.2f}× as fast to the same loss at the estimated noise scale, but {:.2f}× at "
          "the band's worse end (B̄ = {}): it does not win across the band, so the pick stays at your batch",
          configs[summary.winner].config.changes_from(in.ctx.defaults), configs[summary.winner].global_batch, b.time_ratio,
          b.time_ratio_min,
          b.global_batch > o.user_batch() ? with_commas(b.band_lo)  // a bigger batch is worst off at a small B̄
          : std::isfinite(b.band_hi)      ? with_commas(b.band_hi)
                                          : "∞");
      summary.winner = summary.answer_a;
    }
  }
  if (summary.answer_a >= 0 && in.ctx.workload.conv_model &&
      configs[summary.answer_a].batch_size != configs[summary.baseline].batch_size)
    summary.batchnorm_note = fmt::format(
        "answer (a) trains your batch of {} as micro-batches of {}: the maths is the same except for BatchNorm, whose "
        "statistics are computed per micro-batch (per rank with data parallel), so they change with it",
        o.user_batch(), configs[summary.answer_a].batch_size);
}

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
      {pct(b.data_ms), 30, "input-bound", {"num_workers", "prefetch", "decode", "pin_memory"}},
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

void add_confirmation_and_winner(RunSummary& summary, const SummaryInput& in) {
  const auto& configs = summary.configs;
  const ConfigSummary& base = configs[summary.baseline];
  const std::vector<double> base_confirm = confirmation_windows(in.index, base.config);
  std::vector<int> candidates;
  for (const ConfigSummary* c : confirmation_candidates(in.history, in.ctx.opts.confirm_top))
    if (const int j = position(configs, c->config); j >= 0) candidates.push_back(j);
  // The baseline ran in every interleaved round: it is listed with the candidates (its confirmation row says how
  // far the machine drifted), and it wins when it out-measures them there (below).
  const bool base_leads = std::find(candidates.begin(), candidates.end(), summary.baseline) != candidates.end();
  if (!base_confirm.empty() && !base_leads) candidates.push_back(summary.baseline);
  std::vector<Config> rounds_of{base.config};  // every config the interleaved rounds ran
  for (int j : candidates)
    if (j != summary.baseline) rounds_of.push_back(configs[j].config);
  const RunSpread spread = in.ctx.opts.stability.confirm_run_spread ? run_to_run_spread(in.index, rounds_of) : RunSpread{};
  std::vector<ConfigSummary> confirmed_view;  // candidates as measured in the confirmation
  for (int j : candidates) {
    ConfigSummary v = configs[j];
    const RoundLead lead = in.ctx.opts.stability.confirm_round_lead ? round_lead(in.index, v.config, rounds_of) : RoundLead{};
    summary.confirmations.push_back(
        {v.config, confirm_candidate(v, j == summary.baseline, base, base_confirm, in.index, spread, lead)});
    confirmed_view.push_back(v);
  }
  // The winner: among confirmed candidates (all candidates if none confirmed), on confirmation numbers.
  std::vector<ConfigSummary> pool;
  for (size_t i = 0; i < confirmed_view.size(); ++i)
    if (summary.confirmations[i].second.confirmed && (base_leads || !(confirmed_view[i].config == base.config)))
      pool.push_back(confirmed_view[i]);
  if (pool.empty()) pool = confirmed_view;
  const Objective& objective = in.history.objective();
  const int w = choose_winner(pool, in.ctx.defaults, summary.winner_note, objective);
  if (objective.holds_user_batch()) {
    summary.winner = w < 0 ? -1 : position(configs, pool[w].config);
    decide_between_answers(summary, in, pool, confirmed_view);
  } else if (w >= 0) {
    summary.winner = position(configs, pool[w].config);
  }
  // Never a winner measured slower than PyTorch's defaults in the same interleaved rounds: keeping the defaults is
  // always an answer. (Without this, a tiny gpt2 on this CPU was crowned at 0.69× the baseline and a small CNN's
  // auto run at 0.87× [0.69, 1.27].) The baseline competes on its median only: a tie goes to the candidate, as
  // before, so the search's regret on the simulated landscapes is unchanged.
  // Config j's median in the rounds when it measured below the baseline's there, else 0.
  const auto below_baseline = [&](int j) {
    if (j < 0 || j == summary.baseline || base_confirm.empty() || !base.eligible) return 0.0;
    const auto wc = confirmation_windows(in.index, configs[j].config);
    return !wc.empty() && median(wc) < median(base_confirm) ? median(wc) : 0.0;
  };
  if (const double slower = below_baseline(summary.winner); slower > 0) {
    summary.winner_note = fmt::format(
        "the leading candidate '{}' measured {} samples/s in the interleaved rounds, below the baseline's {}: keeping "
        "PyTorch's defaults",
        configs[summary.winner].config.changes_from(in.ctx.defaults), with_commas(slower), with_commas(median(base_confirm)));
    if (summary.answer_a == summary.winner) summary.answer_a = summary.baseline;
    summary.winner = summary.baseline;
  }
  if (objective.holds_user_batch() && below_baseline(summary.answer_a) > 0) summary.answer_a = summary.baseline;
  if (summary.winner < 0) return;
  for (const auto& [c, conf] : summary.confirmations)
    if (c == configs[summary.winner].config) summary.confirmation = conf;
}

void add_speedup(RunSummary& summary, const SummaryInput& in) {
  const ConfigSummary& w = summary.configs[summary.winner];
  const ConfigSummary& base = summary.configs[summary.baseline];
  const auto bc = confirmation_windows(in.index, base.config);
  summary.baseline_confirmation_median = bc.empty() ? 0 : median(bc);
  const Ratio r = ratio_to_baseline(summary, in, summary.winner, "winner");
  summary.speedup = r.value;
  summary.speedup_lo = r.lo;
  summary.speedup_hi = r.hi;
  summary.speedup_basis = r.basis;
  const Objective& o = in.history.objective();
  summary.time_speedup = o.by_time() ? r.value * o.efficiency(w.global_batch, o.noise().value) : r.value;
  if (summary.answer_a >= 0) {
    const Ratio a = ratio_to_baseline(summary, in, summary.answer_a, "answer (a)");
    summary.answer_a_speedup = a.value;
    summary.answer_a_lo = a.lo;
    summary.answer_a_hi = a.hi;
  }
}

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
