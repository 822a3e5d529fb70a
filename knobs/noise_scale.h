#pragma once
// The gradient noise scale (docs/time-to-train.md): B_simple = tr(Σ) / |G|², where G is the true
// gradient and Σ the per-sample gradient covariance. Samples of b examples have E|g_b|² = |G|² + tr(Σ)/b,
// so two batch sizes give unbiased estimates of both terms. The worker records, per optimizer step, the
// mean squared norm of its K micro-batch gradients (size b) and the squared norm of their mean (size
// B = K·b); this file turns those sums into the estimate. Shared by the worker (its stopping rule) and
// the tuner (the estimate, its interval and the ranking), so both read the same numbers the same way.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace autotune {

/// One optimizer step's raw sums. Each micro-batch gradient is the gradient of that micro-batch's mean
/// loss (a division by K for accumulation, or a loss scale, already undone).
struct NoiseStep {
  double small_sq = 0;  ///< mean over the K micro-batches of |g_k|² (batch size b each)
  double big_sq = 0;    ///< |mean_k g_k|²: the step's gradient (batch size B = K·b)
};

/// The per-step unbiased estimates: |G|² and tr(Σ) from one step (either may be negative alone).
struct NoiseTerms {
  double grad_sq = 0;      ///< G_t = (B·big − b·small) / (B − b)
  double trace_sigma = 0;  ///< S_t = (small − big) / (1/b − 1/B)
};
/// Throws std::invalid_argument unless 1 ≤ b < B.
NoiseTerms noise_terms(const NoiseStep& s, double b, double B);

/// B_simple from a run of steps: a ratio of sums over the run (ΣS_t / ΣG_t, never a mean of per-step
/// ratios: one step's G_t can be ≤ 0), with a standard error from contiguous blocks of steps (the
/// ratio estimator's delta-method variance over block sums; blocks absorb the steps' correlation) and a
/// Fieller interval, which stays honest when ΣG_t is not clearly above 0: then only a lower bound.
struct NoiseEstimate {
  int steps = 0;               ///< finite steps used
  int blocks = 0;              ///< contiguous blocks the standard error comes from
  double grad_sq = 0;          ///< mean G_t: |G|²
  double trace_sigma = 0;      ///< mean S_t: tr(Σ)
  double b_simple = 0;         ///< ΣS / ΣG; 0 when ΣG ≤ 0 (no estimate)
  double se = 0;               ///< standard error of b_simple (delta method over blocks)
  double rel_se = std::numeric_limits<double>::infinity();  ///< se / b_simple; ∞ without an estimate
  double lo = 0;               ///< interval (Fieller, t with blocks − 1 dof); lo ≥ 0
  double hi = std::numeric_limits<double>::infinity();      ///< ∞ when only a lower bound holds
  bool valid() const { return b_simple > 0; }
  bool bounded() const { return hi < std::numeric_limits<double>::infinity(); }
};

/// Blocks for the standard error. 16 rather than 8: with 8, the interval of a run stopped at its target
/// error covered the true value in 86% of 300 simulated runs where B ≪ B_simple; with 16, 89–91%
/// (docs/time-to-train.md, "The estimator").
inline constexpr int kNoiseBlocks = 16;

/// The estimate from `steps` (non-finite steps are skipped) with micro-batch `b` and step batch `B`.
/// `t` is the two-sided quantile for the interval (the tuner passes Student's t for blocks − 1 dof; 0:
/// no interval, lo = 0 and hi = ∞). At most `max_blocks` blocks, at least 2 steps per block.
NoiseEstimate estimate_noise_scale(const std::vector<NoiseStep>& steps, double b, double B, double t = 0,
                                   int max_blocks = kNoiseBlocks);

/// What a noise-scale trial does (plan.json's "noise"): steps of K micro-batches of the config's batch
/// size (grad_accum = K), until the relative standard error reaches `target_rel_se` (checked after at
/// least `min_steps`) or `max_steps` / `max_seconds` run out. Untimed: nothing of it is a throughput.
struct NoisePlan {
  bool on = false;
  /// Train this long first, recording nothing: at random initialisation the gradient dwarfs its noise for a
  /// few dozen steps (gpt-mini on text: B_simple ≈ 1 over the first 32 steps, ≈ 28 after 10 s, ≈ 42 after
  /// 120 s; docs/time-to-train.md), a value that says nothing about the rest of training.
  double burn_in_seconds = 0;
  double target_rel_se = 0.25;
  int min_steps = 32;
  int max_steps = 400;
  double max_seconds = 60;
  /// > 0: the noise scale along the run (knobs/noise_trajectory.h). The trial records until training has taken
  /// n0·2^windows steps, n0 = its burn-in steps (min_steps without a burn-in), so that `windows` windows of doubling
  /// length follow the burn-in; the relative-error target does not stop it, max_steps and max_seconds do.
  int windows = 0;
};

/// What a noise-scale trial measured (result.json's "noise").
struct NoiseRecord {
  std::int64_t micro_batch = 0;  ///< b
  int micro_batches = 0;         ///< K (the step's batch B = K·b)
  std::vector<NoiseStep> steps;  ///< every measured step, in order (non-finite ones included, as measured)
  int dropped = 0;               ///< steps with a non-finite norm (fp16 overflow), left out of the estimate
  std::string stopped;           ///< "target" | "windows" (the last window complete) | "max_steps" | "max_seconds"
  double seconds = 0;            ///< time spent measuring
  std::string weights;           ///< where the weights came from: "random init", "checkpoint FILE", "model file FILE"
  double burn_in_seconds = 0;    ///< trained before the first recorded step
  int burn_in_steps = 0;
  double loss_first = 0, loss_last = 0;  ///< mean loss over the first / last 10% of the measured steps
  /// Windows along the run (NoisePlan::windows; 0: a trial from before them, or none planned) and the sample count
  /// since the first step of training where the first one ends (knobs/noise_trajectory.h, noise_windows).
  int windows = 0;
  std::int64_t first_window_end = 0;
};

}  // namespace autotune
