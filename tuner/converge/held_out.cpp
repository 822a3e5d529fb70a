#include "tuner/converge/held_out.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "knobs/error.h"
#include "knobs/held_out.h"
#include "tuner/converge/arms.h"
#include "tuner/measures/statistics.h"

namespace autotune {

std::int64_t default_held_out_every(std::int64_t smooth_samples) { return 2 * std::max<std::int64_t>(1, smooth_samples); }

void check_val_data_worker(const std::string& val_data, const WorkloadInfo& w) {
  if (!val_data.empty() && w.trainer != "python")
    throw UsageError(fmt::format("--val-data {}: the C++ worker does not evaluate on held-out data; the Python worker does "
                                 "(--model module:factory or --task, with --data in the same form)",
                                 val_data));
}

namespace {

/// The highest of the runs' lowest held-out losses (a loss each of them reached); 0 when one has no finite point.
double reached_by_all(const std::vector<const ConvergeRun*>& runs) {
  double t = 0;
  for (const ConvergeRun* r : runs) {
    const double lo = lowest_held_out(r->held_out);
    if (!std::isfinite(lo)) return 0;
    t = std::max(t, lo);
  }
  return t;
}

/// Candidate runs `cands` (order 0 first) against the baseline's `bases` to held-out loss `c.target`: each order's ratio
/// against the baseline's same order (its mean where it has none), and the means over the paired orders.
void time_both(HeldOutComparison& c, const std::vector<const ConvergeRun*>& cands, const std::vector<const ConvergeRun*>& bases,
               double spread) {
  std::vector<std::pair<std::int64_t, double>> base_by_order;
  for (const ConvergeRun* b : bases)
    if (const Reached t = time_to_held_out(b->held_out, c.target); t.reached()) base_by_order.emplace_back(b->data_order, t.seconds);
  if (base_by_order.empty()) return;
  std::vector<double> all_base, cand_times, paired;
  for (const auto& [order, secs] : base_by_order) all_base.push_back(secs);
  for (const ConvergeRun* k : cands) {
    const Reached t = time_to_held_out(k->held_out, c.target);
    if (!t.reached() || t.seconds <= 0) {
      if (k == cands.front()) return;  // order 0 must reach it; another order that does not is left out
      continue;
    }
    double base = mean_value(all_base);
    for (const auto& [order, secs] : base_by_order)
      if (order == k->data_order) {
        base = secs;
        paired.push_back(secs);
      }
    cand_times.push_back(t.seconds);
    c.order_ratios.push_back(base / t.seconds);
  }
  c.baseline_time = mean_value(paired.empty() ? all_base : paired);
  c.candidate_time = mean_value(cand_times);
  c.measured = c.baseline_time / c.candidate_time;
  c.measured_lo = c.measured / (1 + spread);  // a ratio's uncertainty is a factor: never below 0
  c.measured_hi = c.measured * (1 + spread);
  for (double x : c.order_ratios) {
    c.measured_lo = std::min(c.measured_lo, x);
    c.measured_hi = std::max(c.measured_hi, x);
  }
}

/// Which arm is fastest to the training loss and which to the held-out loss, and whether they differ beyond the spread.
void fastest(ConvergeSummary& s) {
  HeldOutSummary& h = s.held_out;
  h.fastest_train = h.fastest_held_out = "the baseline";
  h.fastest_train_ratio = h.fastest_held_out_ratio = h.fastest_train_held_out_ratio = 1;
  int train = -1, held = -1;  // index into comparisons; -1: the baseline
  for (std::size_t i = 0; i < s.comparisons.size(); ++i) {
    const ConvergeComparison& c = s.comparisons[i];
    if (c.measured > h.fastest_train_ratio) {
      train = static_cast<int>(i);
      h.fastest_train_ratio = c.measured;
      h.fastest_train = s.runs[c.run].label;
    }
    if (!h.comparisons[i].stopped_above && h.comparisons[i].measured > h.fastest_held_out_ratio) {
      held = static_cast<int>(i);
      h.fastest_held_out_ratio = h.comparisons[i].measured;
      h.fastest_held_out = s.runs[c.run].label;
    }
  }
  if (train >= 0) h.fastest_train_held_out_ratio = h.comparisons[train].measured;
  h.differ = h.measured > 0 && train != held;
  if (!h.differ) return;
  // each winner's held-out interval, the baseline's exactly 1; a training winner without a held-out ratio says nothing
  auto interval = [&](int i) {
    return i < 0 ? std::pair{1.0, 1.0} : std::pair{h.comparisons[i].measured_lo, h.comparisons[i].measured_hi};
  };
  h.beyond_spread = (train >= 0 && h.comparisons[train].stopped_above) ||
                    ((train < 0 || h.comparisons[train].measured > 0) && interval(held).first > interval(train).second);
}

}  // namespace

void add_held_out(ConvergeSummary& s, const std::vector<TrialRecord>& records) {
  HeldOutSummary& h = s.held_out;
  const std::int64_t every = h.every;
  h = HeldOutSummary();
  h.every = every;
  for (const auto& r : records)
    if (r.result.converge) {
      h.eval_seconds += r.result.converge->val_seconds;
      if (h.source.empty() && !r.result.converge->val_source.empty()) {
        h.source = r.result.converge->val_source;
        h.samples = r.result.converge->val_samples;
      }
    }
  if (!h.on() || s.runs.empty()) return;
  h.runs.resize(s.runs.size());
  for (std::size_t i = 0; i < s.runs.size(); ++i) {
    const auto& v = s.runs[i].held_out;
    h.runs[i].lowest = lowest_held_out(v);
    for (const auto& p : v)
      if (p.samples > 0 && p.loss == h.runs[i].lowest) {
        h.runs[i].lowest_at = p.seconds;
        break;
      }
    if (s.runs[i].status == "ok" && s.runs[i].seconds > 0 && std::isfinite(h.runs[i].lowest))
      h.latest_lowest_share = std::max(h.latest_lowest_share, h.runs[i].lowest_at / s.runs[i].seconds);
    for (auto p = v.rbegin(); p != v.rend(); ++p)
      if (std::isfinite(p->loss)) {
        h.runs[i].final_loss = p->loss;
        break;
      }
  }
  const std::vector<const ConvergeRun*> bases = baseline_runs(s);
  h.target = reached_by_all(bases);
  for (std::size_t i = 0; i < s.runs.size() && h.target > 0; ++i) {
    const Reached t = time_to_held_out(s.runs[i].held_out, h.target);
    h.runs[i].reached = t.reached();
    h.runs[i].time_to_target = t.reached() ? t.seconds : 0;
  }
  std::vector<double> base_times, base_lowest;  // the baseline's runs' figures, from h.runs (aligned with s.runs)
  for (const ConvergeRun* b : bases) {
    const HeldOutRun& r = h.runs[static_cast<std::size_t>(b - s.runs.data())];
    if (r.reached) base_times.push_back(r.time_to_target);
    base_lowest.push_back(r.lowest);
  }
  h.eps_time = base_times.size() == bases.size() ? relative_sd(base_times) : 0;
  h.eps_lowest = relative_sd(base_lowest);
  const double spread = 1.96 * std::sqrt(2.0) * h.eps_time;  // a ratio of two runs, each ± ε
  // where every run started: its evaluation before training (the same weights start every run)
  const auto& first = bases.empty() || bases.front()->held_out.empty() ? s.runs.front().held_out : bases.front()->held_out;
  const double start = first.empty() ? std::nan("") : first.front().loss;
  for (const ConvergeComparison& c : s.comparisons) {
    HeldOutComparison hc;
    const std::vector<const ConvergeRun*> cands = arm_runs(s, c.run);
    std::vector<const ConvergeRun*> both = bases;
    both.insert(both.end(), cands.begin(), cands.end());
    hc.target = reached_by_all(both);
    std::vector<double> cl;
    for (const ConvergeRun* k : cands) cl.push_back(lowest_held_out(k->held_out));
    hc.candidate_lowest = mean_value(cl);
    hc.baseline_lowest = mean_value(base_lowest);
    hc.stopped_above = hc.candidate_lowest > hc.baseline_lowest * (1 + std::max(0.01, 2 * h.eps_lowest));
    hc.start = start;
    hc.never_improved = std::isfinite(hc.start) && hc.target >= hc.start;
    if (hc.target > 0 && !hc.never_improved) time_both(hc, cands, bases, spread);
    if (hc.measured > 0) ++h.measured;
    h.comparisons.push_back(hc);
  }
  fastest(s);
}

}  // namespace autotune
