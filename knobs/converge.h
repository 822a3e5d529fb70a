#pragma once
// Training to a loss (`autotune converge`, docs/time-to-train.md): a trial that trains from step 1 and
// records its loss curve against samples and wall time, and the curve arithmetic both programs use —
// the worker for its stopping rule, the tuner for the time to a target. Training loss per step is
// noisy, so a curve is read smoothed over a fixed number of *samples* (not steps): two runs at different
// batch sizes are then smoothed alike.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace autotune {

/// A phase of a batch ramp (docs/time-to-train.md, "A batch ramp"): from `from_samples` samples trained on, each optimizer
/// step takes `grad_accum` micro-batches of the config's batch_size, at learning rate `lr`.
struct RampStep {
  std::int64_t from_samples = 0;
  int grad_accum = 1;
  double lr = 0;
  bool operator==(const RampStep& o) const { return from_samples == o.from_samples && grad_accum == o.grad_accum && lr == o.lr; }
};

/// plan.json's "converge": train until the smoothed loss reaches `target_loss` (0: no target) or
/// `max_seconds` / `max_samples` (0: no limit) run out. No warm-up and no windows: the time from the
/// first step on is what a user's training would spend.
struct ConvergePlan {
  bool on = false;
  double target_loss = 0;
  double max_seconds = 60;
  std::int64_t max_samples = 0;
  std::int64_t smooth_samples = 2048;  ///< the smoothing window, in samples
  std::string save_checkpoint;         ///< write the trained weights here at the end (never over an existing file)
  /// A batch ramp (empty: the config's grad_accum and the setup's learning rate all along): the first phase from sample
  /// 0, each switched after the optimizer step that reaches its sample count.
  std::vector<RampStep> ramp;
  /// The loss on held-out data (knobs/held_out.h): every `val_every` samples trained (0: never), the mean loss over the
  /// first `val_samples` samples of the held-out set in its own order — the task's val_dataset(), or `val_data` (a file
  /// or folder in --data's form). Its time is not training time. `val_needed`: the user asked for it, so a worker
  /// without a held-out set refuses; otherwise (the tuner's default) one without it just trains.
  std::int64_t val_every = 0;
  std::int64_t val_samples = 1024;
  std::string val_data;
  bool val_needed = false;
};

/// One optimizer step of a converge trial.
struct CurvePoint {
  std::int64_t samples = 0;  ///< samples trained after this step (global: all ranks)
  double seconds = 0;        ///< wall time from the start of step 1 to the end of this step
  double loss = 0;           ///< the step's training loss (NaN when non-finite)
};

/// result.json's "converge".
struct ConvergeRecord {
  std::vector<CurvePoint> points;
  std::string stopped;  ///< "target" | "max_seconds" | "max_samples" | "non_finite"
  double lr = 0;        ///< the learning rate it trained with
  std::int64_t smooth_samples = 0;
  std::string checkpoint;  ///< where the trained weights were written, "" when not asked
  std::vector<std::int64_t> switched_at;  ///< a ramp: the samples trained when each later phase began
  /// The held-out loss at each evaluation: samples trained, training seconds (evaluation time excluded) and the mean
  /// loss over `val_samples` held-out samples; empty when none was evaluated.
  std::vector<CurvePoint> val_points;
  std::int64_t val_samples = 0;
  double val_seconds = 0;  ///< wall time spent evaluating (not in the curve's seconds)
  std::string val_source;  ///< what the held-out set was ("the task's val_dataset() (TensorDataset, 2,000 samples)")
};

/// The smoothing window a run at global batch `largest_batch` (the largest of the runs compared) reads its curve with
/// unless one is given: 8 batches, at least 1,024 samples — enough steps that one step's noise does not decide.
std::int64_t default_smoothing_window(std::int64_t largest_batch);

/// The mean loss of the steps covering the last `window` samples up to and including point `i` (fewer
/// at the start of the curve). NaN when any of them is non-finite.
double smoothed_loss(const std::vector<CurvePoint>& c, std::size_t i, std::int64_t window);

/// The first point at which the smoothed loss is ≤ `target` and the window is full (at least `window`
/// samples trained), as wall seconds and samples; {∞, -1} when the curve never gets there.
struct Reached {
  double seconds = std::numeric_limits<double>::infinity();
  std::int64_t samples = -1;
  bool reached() const { return samples >= 0; }
};
Reached time_to_target(const std::vector<CurvePoint>& c, double target, std::int64_t window);

/// The smoothed loss after `samples` samples (the point that first reaches that count); NaN past the end.
double loss_at_samples(const std::vector<CurvePoint>& c, std::int64_t samples, std::int64_t window);

}  // namespace autotune
