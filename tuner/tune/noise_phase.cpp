#include "tuner/tune/noise_phase.h"

#include <fmt/format.h>

#include <string>

#include "knobs/error.h"
#include "knobs/numbers.h"
#include "tuner/pricing/noise_log.h"

namespace autotune {

namespace {

/// 1b, from the user's own loop: the noise log kept beside the run prices a changed batch (priced again now that the
/// baseline has read the data's size); no noise-scale trial runs.
void noise_from_log(TuneCore& run) {
  run.history.set_objective(objective_for(run.ctx, run.index()));
  const NoiseScaleSummary& n = run.history.objective().noise();
  if (!n.run_length_error.empty()) throw UsageError(n.run_length_error);
  if (!n.measured) {
    run.progress.note(fmt::format("noise scale: {}", n.why_not));
    return;
  }
  run.progress.note(
      fmt::format("noise scale from your loop's log {}: B_simple {} [{}, {}] over the log{}; no noise-scale trial", n.log,
                  with_commas(n.over_run ? n.trial_value : n.value), with_commas(n.over_run ? n.trial_lo : n.lo),
                  with_commas(n.over_run ? n.trial_hi : n.hi),
                  n.over_run ? fmt::format(", {} windows ∝ samples^{:.2f} [{:.2f}, {:.2f}]; over your run ({}) B̄ = {} [{}, {}]",
                                           n.windows.size(), n.growth.exponent, n.growth.lo, n.growth.hi, n.run_basis,
                                           with_commas(n.value), with_commas(n.lo), with_commas(n.hi))
                             : ""));
}

}  // namespace

void measure_noise_scale(TuneCore& run) {
  if (run.opts.objective != ObjectiveKind::time) return;
  if (!run.ctx.time_unrankable.empty()) {
    run.progress.note(
        fmt::format("time to train cannot rank a changed batch: {}. Answer (a), the fastest config at your batch "
                    "of {}, is the pick; other batches are listed by samples/s",
                    run.ctx.time_unrankable, run.ctx.user_batch));
    return;
  }
  if (!run.index().noise_trials().empty()) return;  // resumed: measured already
  if (!kept_noise_log(run.opts.out_dir).empty()) return noise_from_log(run);
  if (run.opts.noise_scale > 0) {
    run.progress.note(fmt::format("noise scale given: B̄ = {} (--noise-scale); no noise-scale trial", run.opts.noise_scale));
    return;
  }
  // No fits() check: the trial's length is its own share of the budget (noise_plan), not a search trial's.
  const TrialRecord& rec = run.run_alone(noise_plan(run.ctx, 0.15 * run.opts.budget_seconds), TrialKind::noise);
  run.history.set_objective(objective_for(run.ctx, run.index()));
  const NoiseScaleSummary& n = run.history.objective().noise();
  if (!n.run_length_error.empty()) throw UsageError(n.run_length_error);
  if (!n.measured) {
    run.progress.line(rec.id, fmt::format("noise     {}", rec.result.status == TrialStatus::ok ? n.why_not : rec.result.message));
    return;
  }
  if (n.over_run) {
    std::string walk;
    for (const auto& w : n.windows) walk += (walk.empty() ? "" : " → ") + with_commas(w.value);
    run.progress.line(
        rec.id,
        fmt::format("noise     B_simple {} over {} windows of {} × {} ({:.0f} s burn-in, {:.0f} s measured): ∝ samples^{:.2f} "
                    "[{:.2f}, {:.2f}]; over your run ({}) B̄ = {} [{}, {}]",
                    walk, n.windows.size(), n.step_batch / n.micro_batch, n.micro_batch, n.burn_in_seconds, n.seconds,
                    n.growth.exponent, n.growth.lo, n.growth.hi, n.run_basis, with_commas(n.value), with_commas(n.lo),
                    with_commas(n.hi)));
    return;
  }
  run.progress.line(rec.id, fmt::format("noise     B_simple {} [{}, {}] (95%) from {} steps of {} × {} ({}; {:.0f} s) — {}",
                                        with_commas(n.value), with_commas(n.lo), n.bounded() ? with_commas(n.hi) : "∞", n.steps,
                                        n.step_batch / n.micro_batch, n.micro_batch, n.stopped, n.seconds,
                                        n.early ? "early training from random weights: it grows as the loss falls"
                                                : "from your weights"));
}

}  // namespace autotune
