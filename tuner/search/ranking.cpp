#include "tuner/search/ranking.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include "knobs/adascale.h"
#include "knobs/noise_scale.h"
#include "knobs/numbers.h"
#include "tuner/measures/statistics.h"

namespace autotune {

namespace {

std::int64_t int_knob(const Config& c, const char* knob) {
  try {
    return std::stoll(c.get(knob, "1"));
  } catch (const std::exception&) {
    return 1;
  }
}

}  // namespace

std::int64_t global_batch(const Config& c, std::int64_t resolved_batch) {
  return resolved_batch * int_knob(c, "grad_accum") * int_knob(c, "ranks");
}

double Objective::efficiency(std::int64_t B, double b_noise) const {
  if (!std::isfinite(b_noise)) return 1.0;  // B̄ → ∞: every sample counts fully at any batch
  return (static_cast<double>(user_batch_) + b_noise) / (static_cast<double>(B) + b_noise);
}

double Objective::compile_factor(const ConfigSummary& s, double x) const {
  if (!(s.compile_seconds > 0) || !(x > 0)) return 1;
  if (noise_.run_samples > 0) return 1 / (1 + s.compile_seconds * x / noise_.run_samples);
  return kCompileHorizonSeconds / (kCompileHorizonSeconds + s.compile_seconds);
}

double Objective::priced(const ConfigSummary& s, double x) const { return x * compile_factor(s, x); }

double Objective::score(const ConfigSummary& s) const {
  return priced(s, by_time() ? s.median * efficiency(s.global_batch, noise_.value) : s.median);
}
double Objective::score_lo(const ConfigSummary& s) const {
  return priced(s, by_time() ? s.ci_lo * efficiency(s.global_batch, noise_.value) : s.ci_lo);
}
double Objective::score_hi(const ConfigSummary& s) const {
  return priced(s, by_time() ? s.ci_hi * efficiency(s.global_batch, noise_.value) : s.ci_hi);
}

bool Objective::rankable(const ConfigSummary& s) const {
  if (kind_ == Kind::throughput) return true;
  return at_user_batch(s) || noise_.usable;
}

std::pair<double, double> Objective::band() const {
  if (!noise_.measured) return {0, 0};
  return {std::min(noise_.value / 2, noise_.lo), std::max(noise_.value * 2, noise_.hi)};
}

void History::mark_in_flight(const Config& c, double window_scale) {
  ConfigSummary s;
  s.config = c;
  s.in_flight = true;
  s.eligible = false;
  s.reason = "in flight";
  s.window_scale = window_scale;
  in_flight_[c.key()] = s;
}

const ConfigSummary* History::best() const {
  const ConfigSummary* b = nullptr;
  for (const auto& [k, s] : by_key_)
    if (leads(s) && (!b || score(s) > score(*b))) b = &s;
  return b;
}

std::vector<const ConfigSummary*> ranked_candidates(const History& h) {
  std::vector<const ConfigSummary*> v;
  for (const auto& [k, s] : h.all())
    if (s.phase != "ablation") v.push_back(&s);
  return ranked_among(h, std::move(v));
}

std::vector<const ConfigSummary*> ranked_among(const History& h, std::vector<const ConfigSummary*> configs) {
  configs.erase(std::remove_if(configs.begin(), configs.end(), [&](const ConfigSummary* s) { return !h.leads(*s); }),
                configs.end());
  std::stable_sort(configs.begin(), configs.end(), [&](auto* a, auto* b) { return h.score(*a) > h.score(*b); });
  return configs;
}

std::vector<std::size_t> best_first(const std::vector<double>& scores) {
  std::vector<std::size_t> order(scores.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return scores[a] > scores[b]; });
  return order;
}

std::vector<const ConfigSummary*> confirmation_candidates(const History& h, int top) {
  const auto ranked = ranked_candidates(h);
  std::vector<const ConfigSummary*> out;
  const Objective& o = h.objective();
  auto first_where = [&](auto pred) {
    for (const ConfigSummary* c : ranked)
      if (pred(*c)) {
        if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
        return;
      }
  };
  if (o.holds_user_batch()) {  // both answers are confirmed, whatever the count asks
    first_where([&](const ConfigSummary& c) { return o.at_user_batch(c); });
    if (o.by_time()) first_where([&](const ConfigSummary& c) { return !o.at_user_batch(c); });
  }
  for (const ConfigSummary* c : ranked) {
    if (static_cast<int>(out.size()) >= std::max(top, 0)) break;
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

int choose_winner(const std::vector<ConfigSummary>& configs, const std::map<std::string, std::string>& defaults,
                  std::string& note, const Objective& o) {
  const auto ok = [&](int i) { return configs[i].eligible && o.rankable(configs[i]); };
  int best = -1;
  for (int i = 0; i < static_cast<int>(configs.size()); ++i)
    if (ok(i) && (best < 0 || o.score(configs[i]) > o.score(configs[best]))) best = i;
  note.clear();
  if (best < 0) return -1;
  // Among configs statistically tied with the best, prefer the simplest, then the leanest.
  auto lo = [&](int i) { return o.score_lo(configs[i]); };
  auto hi = [&](int i) { return o.score_hi(configs[i]); };
  auto rank = [&](int i) {
    return std::make_tuple(configs[i].config.non_default_count(defaults), configs[i].peak_bytes, -o.score(configs[i]));
  };
  int pick = best;
  for (int i = 0; i < static_cast<int>(configs.size()); ++i) {
    if (!ok(i) || i == best) continue;
    if (lo(i) <= hi(best) && lo(best) <= hi(i) && rank(i) < rank(pick)) pick = i;
  }
  if (pick != best) {
    const std::string unit = o.by_time() ? "samples/s at your batch's efficiency" : "samples/s";
    note = fmt::format(
        "'{}' ({:.0f} {}) is within the 95% CI of the {}, '{}' ({:.0f} {}); preferred for fewer non-default knobs ({} vs "
        "{}), then lower peak memory",
        configs[pick].config.changes_from(defaults), o.score(configs[pick]), unit, o.by_time() ? "best" : "fastest",
        configs[best].config.changes_from(defaults),
        o.score(configs[best]), unit,
        configs[pick].config.non_default_count(defaults), configs[best].config.non_default_count(defaults));
  }
  return pick;
}

TimeAnswer price_changed_batch(const Objective& o, int config, std::int64_t batch, double x_b, double x_a) {
  TimeAnswer a;
  a.config = config;
  a.global_batch = batch;
  if (!(x_a > 0) || !o.noise().measured) return a;
  a.throughput_ratio = x_b / x_a;
  const auto [lo, hi] = o.band();
  a.band_lo = lo;
  a.band_hi = hi;
  a.time_ratio = a.throughput_ratio * o.efficiency(batch, o.noise().value);
  const double r_lo = a.throughput_ratio * o.efficiency(batch, lo), r_hi = a.throughput_ratio * o.efficiency(batch, hi);
  a.time_ratio_min = std::min(r_lo, r_hi);
  a.time_ratio_max = std::max(r_lo, r_hi);
  a.beats_a = a.time_ratio_min > 1;
  return a;
}

LrAdvice lr_advice(const Objective& o, std::int64_t B, double lr) {
  LrAdvice a;
  const double b0 = static_cast<double>(o.user_batch());
  if (!o.noise().measured || b0 <= 0 || B == o.user_batch()) return a;
  const double bn = o.noise().value;
  a.given = true;
  a.gain = adascale_gain(static_cast<double>(B), b0, std::isfinite(bn) ? bn : -1);
  a.lr_from = lr;
  a.lr_adam = lr * std::sqrt(a.gain);
  a.lr_sgd = lr * a.gain;
  return a;
}

namespace {

/// The configs of the first non-empty list that `pick` keeps, in order: the confirmed ones, those the confirmation
/// ran, then every measured one but the ablations.
std::vector<ConfigSummary> first_found(const WinnerCandidates& in, const std::function<bool(const ConfigSummary&)>& pick) {
  std::vector<ConfigSummary> out;
  for (const auto* list : {&in.confirmed, &in.rerun, &in.configs}) {
    for (const ConfigSummary& c : *list)
      if (pick(c) && (list != &in.configs || c.phase != "ablation")) out.push_back(c);
    if (!out.empty()) break;
  }
  return out;
}

/// (b) unranked: the fastest stable config at another batch, by samples/s, for the reader to weigh.
TimeAnswer unranked_other_batch(const Objective& o, const std::vector<ConfigSummary>& configs, int a) {
  TimeAnswer out;
  int b = -1;
  for (int j = 0; j < static_cast<int>(configs.size()); ++j)
    if (configs[j].eligible && configs[j].global_batch != o.user_batch() && configs[j].phase != "ablation" &&
        (b < 0 || configs[j].median > configs[b].median))
      b = j;
  if (b < 0) return out;
  out.config = b;
  out.global_batch = configs[b].global_batch;
  if (a >= 0 && configs[a].median > 0) out.throughput_ratio = configs[b].median / configs[a].median;
  out.basis = "search runs (not confirmed: a changed batch is not ranked without a usable noise scale)";
  return out;
}

/// (a) and (b), and whether a winner at another batch stays (decide_winner, under the time objective).
void add_answers(const Objective& o, const WinnerCandidates& in, const std::map<std::string, std::string>& defaults, double lr,
                 Decision& out) {
  const auto& configs = in.configs;
  const int winner = out.winner;
  const std::vector<ConfigSummary> at_user = first_found(in, [&](const ConfigSummary& c) { return o.at_user_batch(c); });
  std::string unused;
  if (const int a = choose_winner(at_user, defaults, unused, o); a >= 0) out.a = config_index(configs, at_user[a].config);
  if (!o.by_time()) {
    out.time_note = o.noise().why_not;
    out.b = unranked_other_batch(o, configs, out.a);
  } else {
    // (b) likewise: a changed batch the confirmation did not re-run is still priced, on its search numbers.
    const std::vector<ConfigSummary> other = first_found(in, [&](const ConfigSummary& c) { return !o.at_user_batch(c); });
    if (const int b = choose_winner(other, defaults, unused, o); b >= 0) {
      const int bj = config_index(configs, other[b].config);
      if (out.a >= 0) {
        const ConfigSummary* a = nullptr;
        for (const ConfigSummary& c : at_user)
          if (c.config == configs[out.a].config) a = &c;
        // Both from the interleaved confirmation when both ran there, else both from the search: never one of each.
        const bool both_confirmed = in.in_rounds(other[b].config) && a && in.in_rounds(a->config);
        const double paired = both_confirmed && in.paired_ratio ? in.paired_ratio(other[b].config, a->config) : 0;
        out.b = paired > 0       ? price_changed_batch(o, bj, other[b].global_batch, paired * a->median, a->median)
                : both_confirmed ? price_changed_batch(o, bj, other[b].global_batch, other[b].median, a->median)
                                 : price_changed_batch(o, bj, other[b].global_batch, configs[bj].median, configs[out.a].median);
        out.b.basis = paired > 0       ? "the interleaved confirmation rounds of both, paired round by round"
                      : both_confirmed ? "the interleaved confirmation runs of both"
                                       : "search runs";
      } else {
        out.b.config = bj;
        out.b.global_batch = other[b].global_batch;
      }
      out.b.lr = lr_advice(o, other[b].global_batch, lr);
    }
  }
  // The winner at another batch must beat (a) across the band of noise scales, not only at the estimate; a changed
  // batch that could not be priced against (a) is never the pick.
  if (winner >= 0 && !o.at_user_batch(configs[winner])) {
    const TimeAnswer& b = out.b;
    if (out.a < 0) {
      out.winner_note = "no stable config at your batch to compare a changed batch with: nothing is picked";
      out.winner = -1;
    } else if (b.config != winner || !b.beats_a) {
      out.winner_note = fmt::format(
          "{} (global batch {}) is predicted {:.2f}× as fast to the same loss at the estimated noise scale, but {:.2f}× at "
          "the band's worse end (B̄ = {}): it does not win across the band, so the pick stays at your batch",
          configs[winner].config.changes_from(defaults), configs[winner].global_batch, b.time_ratio, b.time_ratio_min,
          b.global_batch > o.user_batch() ? with_commas(b.band_lo)  // a bigger batch is worst off at a small B̄
          : std::isfinite(b.band_hi)      ? with_commas(b.band_hi)
                                          : "∞");
      out.winner = out.a;
    }
  }
}

/// Whether the baseline can be the answer: it ran fine, and failed no check but its windows' noise or drift. A noisy
/// host's verdict on it is no reason to crown a config it outran in the same rounds (a tiny BERT's baseline, 14% window
/// spread, once lost to a config at 0.17× its speed); a crash, an OOM, a non-finite loss or memory over the headroom is.
bool usable_reference(const ConfigSummary& base) {
  return base.status == TrialStatus::ok && std::all_of(base.checks.begin(), base.checks.end(), [](const Check& c) {
           return c.passed || c.name == "measurement noise" || c.name == "settled";
         });
}

/// (c): a winner measured slower than the defaults in the same interleaved rounds gives way to them. (Without this, a
/// tiny gpt2 on this CPU was crowned at 0.69× the baseline and a small CNN's auto run at 0.87× [0.69, 1.27].) The
/// baseline competes on its median only: a tie goes to the candidate, so the search's regret on the simulated
/// landscapes is unchanged. Under the time objective "slower" is slower to the same loss: a changed batch's samples/s
/// count at its efficiency (a smaller batch with fewer samples/s can be the faster to train, and a bigger one with more
/// samples/s the slower).
void keep_defaults_when_slower(const Objective& o, const WinnerCandidates& in, const std::map<std::string, std::string>& defaults,
                               Decision& d) {
  const ConfigSummary& base = in.configs[in.baseline];
  const double base_rounds = in.rounds_median(base.config);
  const bool reference = usable_reference(base);
  // Config j's median in the rounds when it measured below the baseline's there (at its efficiency), else 0.
  const auto below_baseline = [&](int j) {
    if (j < 0 || j == in.baseline || base_rounds <= 0 || !reference) return 0.0;
    const double m = in.rounds_median(in.configs[j].config);
    const double worth = o.by_time() ? o.efficiency(in.configs[j].global_batch, o.noise().value) : 1.0;
    return m > 0 && m * worth < base_rounds ? m : 0.0;
  };
  if (const double slower = below_baseline(d.winner); slower > 0) {
    d.winner_note = fmt::format(
        "the leading candidate '{}' measured {} samples/s in the interleaved rounds{}, below the baseline's {}: keeping "
        "PyTorch's defaults",
        in.configs[d.winner].config.changes_from(defaults), with_commas(slower),
        o.by_time() && !o.at_user_batch(in.configs[d.winner])
            ? fmt::format(" (worth {} at your batch: × {:.2f}, its efficiency at B̄)",
                          with_commas(slower * o.efficiency(in.configs[d.winner].global_batch, o.noise().value)),
                          o.efficiency(in.configs[d.winner].global_batch, o.noise().value))
            : "",
        with_commas(base_rounds));
    if (d.a == d.winner) d.a = in.baseline;
    d.winner = in.baseline;
  }
  if (o.holds_user_batch() && below_baseline(d.a) > 0) d.a = in.baseline;
}

/// Significance decides: a pick whose speedup over PyTorch's defaults, measured in the same interleaved rounds,
/// has an interval that reaches 1× is not distinguishable from them on this machine; the defaults stay.
void keep_defaults_when_indistinct(const Objective& o, const WinnerCandidates& in, const std::map<std::string, std::string>& defaults,
                                   Decision& d) {
  if (!in.rounds_ratio || !usable_reference(in.configs[in.baseline])) return;
  const auto indistinct = [&](int j) -> std::optional<RoundsRatio> {
    if (j < 0 || j == in.baseline) return std::nullopt;
    auto r = in.rounds_ratio(in.configs[j].config);
    if (r && o.by_time() && !o.at_user_batch(in.configs[j])) {  // time to the loss: the ratio at the config's efficiency
      const double worth = o.efficiency(in.configs[j].global_batch, o.noise().value);
      r->value *= worth;
      r->lo *= worth;
      r->hi *= worth;
    }
    return r && r->lo <= 1.0 ? r : std::nullopt;
  };
  if (const auto r = indistinct(d.winner)) {
    d.winner_note = fmt::format(
        "'{}' ran {:.2f}× the baseline [{:.2f}, {:.2f}] in the interleaved rounds{}: not distinguishable from PyTorch's defaults "
        "on this machine (the interval reaches 1×), so the defaults stay",
        in.configs[d.winner].config.changes_from(defaults), r->value, r->lo, r->hi,
        o.by_time() && !o.at_user_batch(in.configs[d.winner]) ? " (time to the same loss: samples/s × its efficiency at B̄)" : "");
    d.indistinct = d.winner;
    if (d.a == d.winner) d.a = in.baseline;
    d.winner = in.baseline;
  }
  if (o.holds_user_batch() && indistinct(d.a)) d.a = in.baseline;
}

}  // namespace

Decision decide_winner(const Objective& o, const WinnerCandidates& in, const std::map<std::string, std::string>& defaults, double lr) {
  Decision d;
  const int w = choose_winner(in.confirmed, defaults, d.winner_note, o);
  d.winner = w < 0 ? -1 : config_index(in.configs, in.confirmed[w].config);
  if (o.holds_user_batch()) add_answers(o, in, defaults, lr, d);
  keep_defaults_when_slower(o, in, defaults, d);
  keep_defaults_when_indistinct(o, in, defaults, d);
  return d;
}


}  // namespace autotune
