#pragma once
// The memory model: each config's peak device memory per rank, predicted before it runs
// (docs/memory.md). Peak = the largest of three phase peaks, each a computed part plus a fitted one:
//   forward(b), backward(b) = states + a_F + s_F · b    (activations alive; gradients being made)
//   optimizer(b)            = states + t_F + u_F · b    (the step's transient; data held meanwhile)
// States (parameters, gradients, AdamW's m and v, step counters, DDP buckets) are computed exactly
// from the parameters' sizes (knobs/memory.h, analytic_states) and checked against the bytes the worker
// counted; the fitted parts are piecewise-linear curves, one per phase, through memory probes (short
// untimed trials at small batches) and every real trial of the same family F — the config with its batch size removed and
// the knobs that do not move memory ignored. An out-of-memory trial the model said would fit is a
// miss: recorded, and from then on that family's batches at or above it are predicted not to fit.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "knobs/config.h"
#include "knobs/memory.h"
#include "knobs/record.h"

namespace autotune {

struct MemoryModelOptions {
  std::int64_t capacity_bytes = 0;  ///< what a trial may use (the cap, or the device less its context); 0 = unknown
  double margin = 0.05;             ///< a config fits when its upper prediction ≤ capacity × (1 − margin)
  double max_fit_error = 0.03;      ///< a family whose largest point the smaller ones miss by more than this is not predicted
};

/// One observed peak of a family.
struct MemoryPoint {
  std::int64_t batch = 0;
  std::int64_t forward = 0, backward = 0, optimizer = 0;  ///< each phase's allocated peak (MemoryRecord)
  std::int64_t states_counted = 0;                   ///< the model states the worker counted
  double reserved_ratio = 1;                         ///< the allocator's reserved ÷ allocated peak (1 on the CPU counter)
  std::int64_t trial_id = 0;
  bool probe = false;
};

/// A prediction for one config, with its parts.
struct MemoryPrediction {
  bool known = false;
  std::string why_unknown;  ///< "no probe of this family", "fit error 7.1% > 3%: run it to know", …
  std::string family;
  std::int64_t batch = 0;
  std::int64_t peak = 0, lo = 0, hi = 0;  ///< the allocator's peak per rank and its interval (hi: reserved, see reserved_ratio)
  double reserved_ratio = 1;              ///< the largest reserved ÷ allocated peak the family showed: the allocator's overhead
  std::string phase;                      ///< where the peak falls: "forward" | "backward" | "optimizer"
  StateBytes states;                      ///< computed
  std::int64_t activations = 0;           ///< a_F + s_F · b: the forward and backward peak above the states
  std::int64_t optimizer_transient = 0;   ///< the optimizer line above the states at this batch
  std::int64_t per_sample = 0;            ///< s_F: bytes each sample adds to the forward+backward peak
  std::int64_t capacity = 0;
  bool fits = true;          ///< hi ≤ capacity × (1 − margin) (true when the capacity is unknown)
  std::string oom_seen;      ///< "batch 128 ran out of memory (trial 12)" when a trial at or below this batch did
  int points = 0;            ///< observations behind the fit
  double fit_error = 0;      ///< the largest observed batch predicted from the smaller ones: its relative miss
  /// The report's record of this prediction for `config` (knobs/memory.h), without a decision's reason.
  MemoryEstimate estimate(const Config& config) const;
};

/// A real trial the model said would fit that ran out of memory, or whose peak exceeded the upper prediction.
struct MemoryMiss {
  Config config;
  std::int64_t trial_id = 0;
  std::int64_t predicted_hi = 0, measured = 0;  ///< measured: the peak, or the bytes in use + the refused request (OOM)
  std::string what;                             ///< one line
};

/// The family of `c`: its knobs except batch_size and those that do not move memory (threads,
/// log_every, bucket sizes, static_graph, broadcast_buffers), tf32 read as fp32; a missing knob is its
/// default in `defaults` (Config::default_of).
std::string memory_family(const Config& c, const std::map<std::string, std::string>& defaults);

class MemoryModel {
 public:
  MemoryModel(MemoryModelOptions o, std::map<std::string, std::string> defaults) : o_(o), defaults_(std::move(defaults)) {}

  /// A finished trial (probe or real) with result.memory: a point of its family. An OOM is an upper
  /// bound instead (and a miss when the model said it fits). Records without memory are ignored.
  void add(const TrialRecord& rec);
  MemoryPrediction predict(const Config& c) const;
  /// The largest batch of `c`'s family predicted to fit, at most `max_batch` (powers of two from 1 when
  /// `candidates` is empty, else the largest candidate that fits); 0 when none does, -1 when unknown.
  std::int64_t largest_fitting(const Config& c, const std::vector<std::int64_t>& candidates, std::int64_t max_batch) const;
  /// Whether `c`'s family still needs probes: fewer than two batch sizes observed and no probe failed.
  bool needs_probes(const Config& c) const;
  /// Real trials the model said fit that ran out of memory, retried or peaked above the interval, in order.
  const std::vector<MemoryMiss>& misses() const { return misses_; }
  const MemoryModelOptions& options() const { return o_; }
  /// The states the worker counted vs the analytic ones, per family: equal unless the model is wrong.
  struct StatesCheck {
    std::string family;
    std::int64_t counted = 0, analytic = 0;
  };
  std::vector<StatesCheck> states_checks() const;
  /// One line, when even batch 1 of `c` cannot fit: which term is too big and what to do (sharding the
  /// model states over N ranks, or what shrinks activations). "" when batch 1 fits or nothing is known.
  std::string cannot_fit_advice(const Config& c) const;

 private:
  struct Family {
    std::vector<MemoryPoint> points;
    std::vector<std::int64_t> numels;
    int elem_bytes = 4;
    std::int64_t round = 1;
    std::int64_t oom_batch = 0;  ///< smallest batch that ran out of memory (0: none)
    std::int64_t oom_trial = 0;
    std::string failed;          ///< a probe of this family failed: why
    bool probed = false;         ///< its probes ran (whatever they found)
    Config example;
  };
  /// A phase's peak above the states against the batch: piecewise linear through the observed points
  /// (the largest peak at each batch), the last segment extended beyond them, the first below. A peak
  /// is the maximum over the step of several lines (activations alive, gradients being made, …), so it
  /// is convex in the batch: a line through small batches alone would under-predict large ones.
  struct Curve {
    std::vector<std::pair<double, double>> pts;  ///< (batch, bytes), ascending batch
    /// `min_slope_beyond`: beyond the last point the slope is at least this (the backward grows at least as
    /// fast as the forward: every activation the forward saved is alive when the backward starts).
    double at(double b, double min_slope_beyond = 0) const;
    double slope_at(double b, double min_slope_beyond = 0) const;
  };
  static Curve curve(std::vector<std::pair<double, double>> xy);
  StateBytes states_for(const Family& f, const Config& c) const;
  MemoryModelOptions o_;
  std::map<std::string, std::string> defaults_;
  std::map<std::string, Family> fams_;
  std::vector<MemoryMiss> misses_;
};

}  // namespace autotune
