#pragma once
// A noise log from the user's own training loop (docs/time-to-train.md, "Your own training loop"): the loggers in
// logger/ (Python and a C++ header) write, per optimizer step, the mean squared norm of its micro-batch gradients and
// the squared norm of their mean; this file reads such a log, refuses one that cannot price the user's run (truncated,
// of another model, one micro-batch per step) in one line, and keeps it beside the tune run it prices.
//
// The format, JSON Lines: a header line
//   {"autotune_noise_log": 1, "logger": "python", "mode": "accumulation", "micro_batch": 8, "micro_batches": 4,
//    "parameters": 2410, "tensors": 4, "started": "random init", "data": "…"}
// then one line per logged step
//   {"step": 17, "samples": 544, "small_sq": 0.91, "big_sq": 0.32, "loss": 1.93}
// where samples counts every sample trained since the first step of training (this step's included).
#include <cstdint>
#include <string>
#include <vector>

#include "knobs/noise_scale.h"

namespace autotune {

inline constexpr int kNoiseLogVersion = 1;
/// Fewer logged steps than this cannot give a noise scale with an interval (the estimator's blocks need 2 steps each).
inline constexpr int kNoiseLogMinSteps = 8;
/// The copy a tune run keeps of the log it was priced with (TUNE_DIR/noise-log.jsonl).
inline constexpr const char* kNoiseLogFile = "noise-log.jsonl";

struct NoiseLog {
  std::string path;
  std::string logger;  ///< "python" | "c++"
  std::string mode;    ///< "accumulation" (micro-batches of one process) | "ranks" (one micro-batch per rank)
  std::int64_t micro_batch = 0;
  int micro_batches = 0;
  std::int64_t parameters = 0;  ///< trainable elements of the model it logged
  int tensors = 0;              ///< trainable tensors
  std::string started;          ///< "random init" | "checkpoint"
  std::string data;             ///< what the loop trained on, in the user's words ("" when not given)
  std::vector<NoiseStep> steps;
  std::vector<std::int64_t> samples;  ///< samples since the first step of training, after each logged step
  std::vector<double> losses;         ///< NaN where a step logged none
  std::vector<std::int64_t> step_numbers;
  int dropped = 0;                    ///< steps with a non-finite norm (left out of the estimate, counted)
  std::int64_t step_batch() const { return micro_batch * micro_batches; }
  /// "FILE (python logger, 400 steps of 4 × 8, from random init)".
  std::string describe() const;
};

/// Reads a noise log. UsageError, one line naming the file and what is wrong, when it is unreadable, not a noise log, of
/// another version, truncated (a last line cut short) or corrupt (a line that is not a step), has fewer than 2
/// micro-batches per step, samples that do not grow, or fewer than kNoiseLogMinSteps steps.
NoiseLog read_noise_log(const std::string& path);

/// UsageError unless the log's model has `parameters` trainable elements in `tensors` tensors (the model `what` names).
/// `parameters` 0: the run does not know its model's size (a run from before noise logs) — refused too, it cannot be checked.
void check_noise_log_model(const NoiseLog& log, std::int64_t parameters, int tensors, const std::string& what);

/// UsageError when a --run-length in samples or tokens (`tokens_per_sample` > 0) is shorter than the samples the log
/// itself trained (one in epochs is checked once the data's size is known, as for a noise-scale trial).
void check_run_covers_log(const NoiseLog& log, const std::string& run_length, double tokens_per_sample);

/// Copies the log to TUNE_DIR/noise-log.jsonl; one there already is kept, renamed noise-log-<n>.jsonl. Returns the path.
std::string keep_noise_log(const std::string& tune_dir, const NoiseLog& log);

/// Where a run keeps its log ("" when it has none).
std::string kept_noise_log(const std::string& tune_dir);


}  // namespace autotune
