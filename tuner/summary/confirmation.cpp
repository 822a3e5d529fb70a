#include "tuner/summary/confirmation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "knobs/numbers.h"
#include "reports/batch_norm_note.h"
#include "tuner/measures/paired_rounds.h"
#include "tuner/measures/statistics.h"
#include "tuner/search/ranking.h"
#include "tuner/search/stability.h"

namespace autotune {

namespace {

/// A confirmation ratio this many times outside the search's interval (either way) is not a confirmation.
constexpr double kDeparture = 1.5;

/// The windows of every confirmation run of `c`, pooled; empty when none ran or any run failed.
std::vector<double> confirmation_windows(const RecordIndex& index, const Config& c) { return pooled_windows(index.confirms(c)); }

/// The median window throughput of one confirmation run; 0 when it failed or measured nothing.
double run_median(const TrialRecord* r) {
  return r->result.status == TrialStatus::ok && !r->result.throughputs().empty() ? median(r->result.throughputs()) : 0.0;
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
/// The baseline's move between its search trial and its confirmation runs, in words. The search timed one process
/// of it, and fresh processes of one unchanged config differ on a quiet machine (on this project's 2-core VM, 24
/// back-to-back processes of one config: 10% apart per run, 1.62× from slowest to fastest, uncorrelated from one to
/// the next — docs/search.md): a move within that spread (the log move against Student's t × sigma × √(1 + 1/R), one
/// search process against the mean of R runs) is that, not drift; beyond it, the machine drifted. Ratios are taken
/// within the interleaved rounds either way.
/// How far (in log units) two run medians may lie apart by run-to-run spread alone, for a difference whose variance is
/// `terms` × sigma² (sigma estimated from few runs: Student's t at its degrees of freedom); and that bound as a ± in %.
double spread_tolerance(RunSpread spread, double terms) { return t_quantile_975(spread.dof) * spread.sigma * std::sqrt(terms); }
double tolerance_pct(double tolerance) { return 100 * (std::exp(tolerance) - 1); }

std::string baseline_move(double move, RunSpread spread, double rounds) {
  const std::string moved = fmt::format("moved {:+.1f}% since the search", 100 * move);
  if (spread.dof == 0)  // no config ran twice in the rounds: the spread is unknown
    return moved + ": the machine drifted, or the search's one process of it ran at another speed than these; every ratio is "
                   "taken within the same interleaved rounds";
  const double tolerance = spread_tolerance(spread, 1.0 + 1.0 / std::max(1.0, rounds));
  const std::string spread_words = fmt::format("{:.1f}% per run in these rounds: ±{:.1f}%", 100 * spread.sigma, tolerance_pct(tolerance));
  if (std::abs(std::log1p(move)) <= tolerance)
    return fmt::format("{}, within how much fresh processes of one config differ on this machine ({}): the search timed one "
                       "process of it; every ratio is taken within the same interleaved rounds",
                       moved, spread_words);
  return fmt::format("{}, beyond how much fresh processes of one config differ ({}): the machine drifted; every ratio is "
                     "taken within the same interleaved rounds, which cancels it",
                     moved, spread_words);
}

/// The busiest confirmation run of `configs` (busy by `o`: tuner/search/stability.h), for the verdict's words.
struct BusyRounds {
  int busy = 0, runs = 0, cpus = 0;
  double max_other_cores = 0;
};
BusyRounds busy_rounds(const RecordIndex& index, const std::vector<Config>& configs, const StabilityOptions& o) {
  BusyRounds b;
  for (const Config& c : configs)
    for (const auto* r : index.confirms(c)) {
      ++b.runs;
      if (!host_busy(r->result, o)) continue;
      ++b.busy;
      b.max_other_cores = std::max(b.max_other_cores, r->result.host_load->other_cores);
      b.cpus = r->result.host_load->cpus;
    }
  return b;
}

Confirmation confirm_candidate(ConfigSummary& v, bool is_baseline, const ConfigSummary& base,
                               const std::vector<double>& base_confirm, const RecordIndex& index, RunSpread spread,
                               RoundLead lead, const StabilityOptions& limits, const std::string& unrun) {
  const std::vector<double> pooled = confirmation_windows(index, v.config);
  const auto& runs = index.confirms(v.config);
  Confirmation conf;
  conf.ran = !runs.empty();
  conf.trial_id = runs.empty() ? 0 : runs.back()->id;
  if (pooled.empty()) {
    conf.detail = conf.ran ? "a confirmation run failed" : unrun;
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
    // The rounds' ratio paired round by round (tuner/measures/paired_rounds.h): each round's runs met the same machine.
    const PairedRatio paired = paired_ratio(paired_rounds(runs, index.confirms(base.config)));
    const Interval now = paired.value > 0 ? Interval{paired.lo, paired.hi} : bootstrap_ratio_ci(pooled, base_confirm);
    const Interval then = bootstrap_ratio_ci(v.throughputs, base.throughputs);
    const double ratio_now = paired.value > 0 ? paired.value : conf.median / median(base_confirm);
    const double ratio_then = v.median / base.median;
    conf.ratio = ratio_now;
    const double rounds = static_cast<double>(runs.size()), base_rounds = static_cast<double>(index.confirms(base.config).size());
    const double sigma = spread.sigma;
    const double tolerance = spread_tolerance(spread, 2.0 + 1.0 / rounds + 1.0 / std::max(1.0, base_rounds));
    const double allowed_pct = tolerance_pct(tolerance);  // the tolerance as a ± on the ratio
    // Faster than the search claimed (the whole CI above) confirms too: the claim was conservative.
    const bool exceeded = now.lo > then.hi;
    const bool overlap = now.overlaps(then);
    const bool within_spread = std::abs(std::log(ratio_now / ratio_then)) <= tolerance;
    // Far beyond both intervals (a 22.97× confirmation of a 1.74× search): the rounds measured another machine
    // (a program started beside them), not the candidate; neither "exceeded" nor a round lead confirms that.
    const bool departed = now.lo > kDeparture * then.hi || now.hi * kDeparture < then.lo;
    const BusyRounds busy = busy_rounds(index, {v.config, base.config}, limits);
    conf.confirmed = !departed && busy.busy == 0 && (overlap || exceeded || within_spread || lead.held);
    const std::string beyond =
        sigma > 0 ? fmt::format(" (beyond the run-to-run spread: {:.1f}% per run, ±{:.1f}%)", 100 * sigma, allowed_pct) : "";
    const std::string how =
        busy.busy > 0 ? fmt::format("not confirmed: the host was busy during {} of its {} interleaved runs (other processes used up "
                                    "to {:.2f} of {} CPUs); run it again on a quiet host",
                                    busy.busy, busy.runs, busy.max_other_cores, busy.cpus)
        : departed ? fmt::format("not confirmed: it departs from the search far beyond both intervals (more than {:.1f}× apart; "
                                 "the baseline ran at {:.0f}% of its search speed): the machine changed under the rounds",
                                 kDeparture, 100 * median(base_confirm) / base.median)
        : exceeded  ? "exceeded"
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
      conf.detail = fmt::format("{} — {}", absolute, baseline_move(conf.median / v.median - 1, spread, static_cast<double>(runs.size())));
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
  bool rounds = false;  ///< taken from the interleaved confirmation runs (not the search's)
};
/// The interleaved rounds `num` and `den` both ran, paired round by round: the confirmation's rounds, then the effect
/// rounds' (they ran the winner beside the baseline again, the same kind of rounds), so that the headline, answer (b)
/// and the knob effects come from the same rounds.
std::vector<RoundPair> rounds_between(const RecordIndex& index, const Config& num, const Config& den) {
  return paired_rounds(index.confirms(num), index.confirms(den), index.effects(num), index.effects(den));
}

/// The rounds' ratios in words: "2.75×, 2.45×", at most six of them.
std::string round_ratios(const std::vector<double>& per_round) {
  std::string out;
  for (std::size_t i = 0; i < per_round.size() && i < 6; ++i) out += fmt::format("{}{:.2f}×", i ? ", " : "", per_round[i]);
  if (per_round.size() > 6) out += fmt::format(" and {} more", per_round.size() - 6);
  return out;
}

Ratio ratio_to_baseline(const RunSummary& summary, const SummaryInput& in, int j, const char* label) {
  const ConfigSummary& c = summary.configs[j];
  const ConfigSummary& base = summary.configs[summary.baseline];
  Ratio r;
  r.basis = "search runs";
  if (base.status != TrialStatus::ok) return r;
  if (!confirmation_windows(in.index, c.config).empty() && !confirmation_windows(in.index, base.config).empty()) {
    const PairedRatio p = paired_ratio(rounds_between(in.index, c.config, base.config));
    if (p.value > 0) {
      const bool effects = !in.index.effects(c.config).empty() && !in.index.effects(base.config).empty();
      r.rounds = true;
      r.value = p.value;
      r.lo = p.lo;
      r.hi = p.hi;
      r.basis = fmt::format("interleaved {} runs, paired round by round ({} ÷ baseline {} in {}; {})",
                            effects ? "confirmation and effect-round" : "confirmation", label, round_ratios(p.per_round),
                            p.per_round.size() == 1 ? "the one round" : fmt::format("the {} rounds", p.per_round.size()),
                            p.per_round.size() == 1 ? "that round's ratio" : "their geometric mean");
      return r;
    }
  }
  if (median(base.throughputs) > 0 && !c.throughputs.empty()) {
    r.value = median(c.throughputs) / median(base.throughputs);
    const Interval ci = bootstrap_ratio_ci(c.throughputs, base.throughputs);
    r.lo = ci.lo;
    r.hi = ci.hi;
  }
  return r;
}

/// `num` ÷ `den` paired round by round (tuner/search/ranking.h, WinnerCandidates::paired_ratio): the same rounds and
/// the same statistic as the headline's (ratio_to_baseline).
double paired_rounds_ratio(const RecordIndex& index, const Config& num, const Config& den) {
  return paired_ratio(rounds_between(index, num, den)).value;
}

/// The winner and the time objective's answers (tuner/search/ranking.h, decide_winner) entered in the summary, with the BatchNorm
/// caveat when answer (a) splits the user's batch into other micro-batches.
void add_decision(RunSummary& summary, const SummaryInput& in, const std::vector<ConfigSummary>& confirmed,
                  const std::vector<ConfigSummary>& rerun) {
  const Objective& o = in.history.objective();
  const auto& configs = summary.configs;
  const WinnerCandidates candidates{configs, confirmed, rerun, summary.baseline,
                                    [&](const Config& c) { return !in.index.confirms(c).empty(); },
                                    [&](const Config& c) {
                                      const std::vector<double> w = confirmation_windows(in.index, c);
                                      return w.empty() ? 0.0 : median(w);
                                    },
                                    [&](const Config& c) -> std::optional<RoundsRatio> {  // the speedup's own ratio
                                      const int j = config_index(configs, c);
                                      const Ratio r = j < 0 ? Ratio{} : ratio_to_baseline(summary, in, j, "candidate");
                                      if (!r.rounds || !(r.value > 0)) return std::nullopt;
                                      return RoundsRatio{r.value, r.lo, r.hi};
                                    },
                                    [&](const Config& num, const Config& den) { return paired_rounds_ratio(in.index, num, den); }};
  const Decision d = decide_winner(o, candidates, in.ctx.defaults, trained_lr(in.ctx.opts.setup, in.ctx.workload));
  summary.winner = d.winner;
  summary.winner_note = d.winner_note;
  summary.answer_a = d.a;
  summary.answer_b = d.b;
  summary.time_note = d.time_note;
  summary.indistinct = d.indistinct;
  if (summary.answer_a >= 0 && configs[summary.answer_a].batch_size != configs[summary.baseline].batch_size)
    summary.batchnorm_note = micro_batch_note(in.ctx.workload, o.user_batch(), configs[summary.answer_a].batch_size);
}

/// Why a candidate's interleaved rounds did not run, as the run's facts say (tune.cpp, confirm(): round 1 runs
/// whenever the run reaches it with a candidate besides the baseline; later rounds as the budget allows).
std::string unrun_reason(const RunSummary& summary, const SummaryInput& in, const std::vector<int>& candidates) {
  const bool others = std::any_of(candidates.begin(), candidates.end(), [&](int j) { return j != summary.baseline; });
  const bool any_ran = std::any_of(summary.configs.begin(), summary.configs.end(),
                                   [&](const ConfigSummary& c) { return !in.index.confirms(c.config).empty(); });
  if (!summary.finished) return "not run: the run was interrupted before its interleaved rounds (--resume goes on)";
  if (!others && summary.configs.size() <= 1 && !summary.unexplored.empty())
    return fmt::format("not run (budget: no other config was measured before the budget ran out, {:.0f} s of {:.0f} s)",
                       summary.elapsed_seconds, summary.budget_seconds);
  if (!others) return "not run: no other config was stable, so there was nothing to interleave the baseline with";
  if (any_ran) return "not run: it was not among the configs the interleaved rounds ran";
  return fmt::format("not run (budget: the search used {:.0f} s of the {:.0f} s)", summary.elapsed_seconds, summary.budget_seconds);
}

}  // namespace

void add_confirmation_and_winner(RunSummary& summary, const SummaryInput& in) {
  const auto& configs = summary.configs;
  const ConfigSummary& base = configs[summary.baseline];
  const std::vector<double> base_confirm = confirmation_windows(in.index, base.config);
  std::vector<int> candidates;
  for (const ConfigSummary* c : confirmation_candidates(in.history, in.ctx.opts.confirm_top))
    if (const int j = config_index(configs, c->config); j >= 0) candidates.push_back(j);
  // The baseline ran in every interleaved round: it is listed with the candidates (its confirmation row says how
  // far the machine drifted), and it wins when it out-measures them there (below).
  const bool base_leads = std::find(candidates.begin(), candidates.end(), summary.baseline) != candidates.end();
  if (!base_confirm.empty() && !base_leads) candidates.push_back(summary.baseline);
  std::vector<Config> rounds_of{base.config};  // every config the interleaved rounds ran
  for (int j : candidates)
    if (j != summary.baseline) rounds_of.push_back(configs[j].config);
  const RunSpread spread = in.ctx.opts.stability.confirm_run_spread ? run_to_run_spread(in.index, rounds_of) : RunSpread{};
  std::vector<ConfigSummary> confirmed_view;  // candidates as measured in the confirmation
  const std::string unrun = unrun_reason(summary, in, candidates);
  for (int j : candidates) {
    ConfigSummary v = configs[j];
    const RoundLead lead = in.ctx.opts.stability.confirm_round_lead ? round_lead(in.index, v.config, rounds_of) : RoundLead{};
    summary.confirmations.push_back(
        {v.config, confirm_candidate(v, j == summary.baseline, base, base_confirm, in.index, spread, lead, in.ctx.opts.stability,
                                          unrun)});
    confirmed_view.push_back(v);
  }
  // The winner: among confirmed candidates (all candidates if none confirmed), on confirmation numbers.
  std::vector<ConfigSummary> pool;
  for (size_t i = 0; i < confirmed_view.size(); ++i)
    if (summary.confirmations[i].second.confirmed && (base_leads || !(confirmed_view[i].config == base.config)))
      pool.push_back(confirmed_view[i]);
  if (pool.empty()) pool = confirmed_view;
  add_decision(summary, in, pool, confirmed_view);
  if (summary.winner < 0) return;
  for (const auto& [c, conf] : summary.confirmations)
    if (c == configs[summary.winner].config) summary.confirmation = conf;
}

void add_speedup(RunSummary& summary, const SummaryInput& in) {
  const ConfigSummary& w = summary.configs[summary.winner];
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
  // A winner that is answer (b): the prediction the first screen prints for (b) — one computation, not a second one
  // from pooled medians that printed 2.60× above (b)'s 2.57× for the same two configs.
  if (o.by_time() && summary.winner == summary.answer_b.config)
    if (const double b = answer_b_over_baseline(summary); b > 0) summary.time_speedup = b;
}

double answer_b_over_baseline(const RunSummary& summary) {
  if (!(summary.answer_b.time_ratio > 0) || summary.answer_a < 0) return 0;
  const bool a_is_base = summary.answer_a == summary.baseline || !(summary.answer_a_speedup > 0);
  return summary.answer_b.time_ratio * (a_is_base ? 1.0 : summary.answer_a_speedup);
}

}  // namespace autotune
