#pragma once
// The training step with every knob applied: data, host-to-device copy, forward under autocast,
// backward (scaled for fp16), optimizer, zero_grad; grad accumulation, sync-free loss reads and the
// CUDA-graph replay. Phases are timed on the host; on a GPU a phase's host time is its launch time
// unless it syncs (window boundaries synchronise, so throughput is exact).
#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "knobs/resolve.h"
#include "profiler/step_timer.h"
#include "workloads/engine/cuda_graph_step.h"
#include "workloads/engine/device_memory.h"
#include "workloads/engine/dist/ddp.h"
#include "workloads/engine/grad_noise.h"
#include "workloads/engine/grad_scaler.h"
#include "workloads/engine/optim.h"
#include "workloads/engine/staging.h"
#include "workloads/workload.h"

namespace autotune {

class Stepper {
 public:
  Stepper(Workload& w, AdamW& opt, torch::Device dev, const Settings& s, StepTimer& timer);

  /// One optimizer step over grad_accum micro-batches. Losses are read every log_every steps.
  void step();
  /// Reads the losses kept on the device (one sync for log_every steps).
  void flush();
  /// Micro-batches per optimizer step from the next step on (a batch ramp's switch; the settings' grad_accum until then).
  /// Eager steps only: a CUDA graph was captured at one length.
  void set_grad_accum(int accum);
  int grad_accum() const { return accum_; }

  std::vector<double>& losses() { return losses_; }
  std::vector<bool>& skips() { return skips_; }
  int reads() const { return reads_; }
  GradScaler* scaler() { return scaler_.get(); }
  PinnedStager* stager() { return stager_.get(); }
  GraphedStep* graphed() { return graphed_.get(); }
  const std::string& augment_proof() const { return augment_proof_; }
  bool amp() const { return amp_; }
  /// Data-parallel: gradients are averaged over the ranks by `ddp` during backward (no_sync on the
  /// micro-steps before the last). Its per-step communication is summed into comm().
  void attach(dist::DataParallel* ddp) { ddp_ = ddp; }
  /// Communication of the steps since the last reset (data-parallel trials).
  struct CommTotals {
    int steps = 0, collectives = 0;
    std::int64_t bytes = 0;
    double comm_seconds = 0, overlap_seconds = 0;
  };
  CommTotals& comm() { return comm_; }
  /// While on, every collective's interval is kept (a traced data-parallel step draws them).
  void keep_comm_intervals(bool on) { keep_intervals_ = on; }
  std::vector<dist::CommInterval> take_comm_intervals() { return std::exchange(intervals_, {}); }
  /// Called with the phase a step enters ("data", "forward", "backward", "optimizer") and the step's
  /// number: a data-parallel rank's progress, read when a trial hangs (which rank stopped where).
  void on_phase(std::function<void(const char*, std::int64_t)> f) { phase_ = std::move(f); }
  /// The memory meter reads the allocator's peak around each phase (knobs/memory.h); nullptr: none.
  void meter(MemoryMeter* m) { meter_ = m; }
  c10::ScalarType amp_dtype() const { return amp_dtype_; }
  /// A noise-scale trial: from now on every step records its micro-batch gradients' and its
  /// accumulated gradient's squared norms (engine/grad_noise.h; one host sync per step). Needs
  /// grad_accum ≥ 2, eager steps and one process.
  void measure_noise();
  /// The steps recorded since measure_noise(), in order.
  std::vector<NoiseStep>& noise_steps() { return noise_steps_; }

 private:
  /// The data phase (next batch on the host) and the H2D phase (to the device, in the model's
  /// memory format), each timed.
  Batch fetch();
  /// cuda_graphs: data and H2D as usual, then one replay does forward, backward and optimizer (its
  /// time is attributed to the forward phase). The graph is captured on the first call (warm-up).
  void graphed_step();
  /// The optimizer step, through the GradScaler for fp16 (a skipped step is recorded, not synced).
  void optimizer_step();

  Workload& w_;
  AdamW& opt_;
  torch::Device dev_;
  const Settings& s_;
  StepTimer& timer_;
  int accum_ = 1;
  bool amp_ = false;
  c10::ScalarType amp_dtype_ = torch::kBFloat16;
  std::unique_ptr<GradScaler> scaler_;
  std::unique_ptr<PinnedStager> stager_;
  std::unique_ptr<GraphedStep> graphed_;
  std::vector<torch::Tensor> pending_losses_, pending_skips_;
  std::string augment_proof_;
  dist::DataParallel* ddp_ = nullptr;
  CommTotals comm_;
  bool keep_intervals_ = false;
  std::vector<dist::CommInterval> intervals_;
  std::function<void(const char*, std::int64_t)> phase_;
  std::int64_t steps_ = 0;
  MemoryMeter* meter_ = nullptr;
  void phase(const char* p) {
    if (meter_) meter_->enter(p);
    if (phase_) phase_(p, steps_);
  }
  std::unique_ptr<GradNoiseMeter> noise_;
  std::vector<NoiseStep> noise_steps_;
  std::vector<double> losses_;
  std::vector<bool> skips_;
  int reads_ = 0;
};

/// "(64, 256, 256, 3)"
std::string shape(const torch::Tensor& t);

}  // namespace autotune
