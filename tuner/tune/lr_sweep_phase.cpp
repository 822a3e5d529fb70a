#include "tuner/tune/lr_sweep_phase.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "knobs/converge.h"
#include "knobs/numbers.h"
#include "reports/lr_sweep_report.h"
#include "tuner/converge/lr_sweep_run.h"
#include "tuner/exec/interrupt.h"
#include "tuner/measures/journal.h"
#include "tuner/pricing/lr_sweep.h"

namespace autotune {

namespace fs = std::filesystem;

namespace {

constexpr int kOrders = 2;  // each rate on two data orders: the run-to-run spread the verdict needs

std::vector<std::string> sweeps_asked(const std::string& option) {
  if (option == "both") return {"your-batch", "changed-batch"};
  if (option == "your-batch" || option == "changed-batch") return {option};
  return {};
}

fs::path sweep_dir(const TuneCore& run, const std::string& at) { return run.out / ("sweep-" + at); }

std::string batch_words(const std::string& at) { return at == "your-batch" ? "your batch" : "answer (b)'s batch"; }

/// The baseline's samples/s over its windows and the seconds a trial spends outside them (start-up, warm-up): what
/// a sweep's run costs besides its samples. {0, 0} before the baseline has a window.
std::pair<double, double> baseline_rates(TuneCore& run) {
  double samples = 0, seconds = 0, start = 0;
  int n = 0;
  for (const TrialRecord* r : run.index().attempts(run.ctx.baseline, 1.0)) {
    if (r->result.status != TrialStatus::ok || r->result.windows.empty()) continue;
    double in_windows = 0;
    for (const Window& w : r->result.windows) {
      samples += static_cast<double>(w.samples);
      in_windows += w.seconds;
    }
    seconds += in_windows;
    start += std::max(0.0, r->result.wall_seconds - in_windows);
    ++n;
  }
  if (n == 0 || seconds <= 0) return {0, 0};
  return {samples / seconds, start / n};
}

}  // namespace

void keep_for_lr_sweeps(TuneCore& run) {
  run.lr_sweeps_kept.clear();
  const std::vector<std::string> asked = sweeps_asked(run.opts.lr_sweep);
  if (asked.empty()) return;
  if (run.opts.objective != ObjectiveKind::time) {
    run.progress.note("--lr-sweep: not run — it prices the time to the loss, and this run's objective is throughput");
    return;
  }
  const auto [sps, start] = baseline_rates(run);
  if (sps <= 0) {
    run.progress.note("--lr-sweep: not run — the baseline measured no samples/s to size it by");
    return;
  }
  const double run_samples = objective_for(run.ctx, run.index()).noise().run_samples;
  const LrSweepRule rule;
  const LrHorizon h = plan_lr_horizon(run_samples, default_smoothing_window(run.ctx.user_batch), rule);
  const double each = lr_sweep_seconds(h, rule, kOrders, sps, start);
  for (const std::string& at : asked) {
    if (fs::exists(sweep_dir(run, at) / "lr-sweep.json")) {
      run.progress.note(fmt::format("learning-rate sweep at {}: measured already ({}), not repeated", batch_words(at),
                                    (sweep_dir(run, at) / "lr-sweep.md").string()));
      continue;
    }
    // What the search needs at least: one trial and the confirmation's reserve.
    const double available = run.budget.left() - run.budget.trial_seconds() * (1 + run.reserve);
    if (each > available) {
      run.progress.note(fmt::format(
          "learning-rate sweep at {}: not run — it needs about {:.0f} s and the budget has {:.0f} s to spare beside the "
          "search's least; give --budget {:.0f}m, or run autotune lr-sweep --from-run {} --at {} afterwards",
          batch_words(at), each, std::max(0.0, available), std::ceil((run.opts.budget_seconds + each - available) / 60),
          run.out.string(), at));
      continue;
    }
    run.budget.set_aside(each);
    run.lr_sweeps_kept.push_back(at);
    run.progress.note(fmt::format(
        "learning-rate sweep at {}: about {:.0f} s kept from the budget — ×1/3, ×1, ×3, ×10 the rate, each from your start "
        "for {} samples on {} data orders, at the baseline's {:.0f} samples/s and {:.1f} s start-up a run{}; more if the "
        "best sits at an end; the search has as much less",
        batch_words(at), each, with_commas(static_cast<double>(h.horizon_samples)), kOrders, sps, start,
        at == "changed-batch" ? " (a bigger batch's samples/s, unknown yet, is usually higher)" : ""));
  }
}

bool run_lr_sweeps(TuneCore& run, const RunSummary& summary) {
  bool ran = false;
  for (const std::string& at : run.lr_sweeps_kept) {
    if (stop_signal()) break;
    if (at == "changed-batch" && summary.answer_b.config < 0) {
      run.progress.note("learning-rate sweep at answer (b)'s batch: not run — the run has no answer (b) (its report says why)");
      continue;
    }
    const fs::path dir = sweep_dir(run, at);
    if (fs::exists(dir)) {  // an interrupted sweep of an earlier invocation: kept under another name, never reused
      const fs::path aside = dir.string() + ".interrupted-" + utc_now_formatted("%Y%m%d-%H%M%S");
      fs::rename(dir, aside);
      run.progress.note(
          fmt::format("learning-rate sweep at {}: an earlier, unfinished one kept as {}", batch_words(at), aside.string()));
    }
    LrSweepOptions o;
    o.from_run = run.out.string();
    o.at = at;
    o.worker = run.opts.worker;
    o.orders = kOrders;
    o.run_length.count = summary.noise_scale.run_samples;  // the run's own pricing converted it to samples
    o.out_dir = dir.string();
    std::ostream& out = run.progress.stream();
    out << "\n";
    try {
      const LrSweepSummary s = run_lr_sweep(o, out);
      out << lr_sweep_headline(s) << "\n";
      ran = true;
    } catch (const Interrupted&) {
      run.progress.note(fmt::format("learning-rate sweep at {}: interrupted; the run's reports stand without it, its "
                                    "finished rates are in {}",
                                    batch_words(at), dir.string()));
      throw;
    }
  }
  return ran;
}

}  // namespace autotune
