#pragma once
// Data-parallel training with PyTorch's own gradient synchroniser, c10d::Reducer: gradients are
// bucketed, each bucket's allreduce starts as soon as its gradients are ready (overlapping the rest of
// backward), and the averaged gradients land in .grad before the optimizer runs. This class does from
// C++ what torch.nn.parallel.DistributedDataParallel's Python wrapper does around the Reducer: the
// start-up broadcast of parameters and buffers, the per-forward buffer broadcast, bucket rebuilding,
// no_sync for accumulation micro-steps, static-graph's first-iteration delayed allreduce, and the
// communication hook. docs/distributed.md describes each step.
#include <torch/csrc/distributed/c10d/reducer.hpp>
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "knobs/resolve.h"
#include "workloads/engine/dist/process_group.h"

namespace autotune::dist {

struct DdpOptions {
  std::int64_t bucket_mb = 25;          ///< DDP's bucket_cap_mb
  std::int64_t first_bucket_mb = 1;     ///< the first bucket's cap (DDP's _DEFAULT_FIRST_BUCKET_BYTES = 1 MiB)
  bool grad_as_bucket_view = false;     ///< .grad tensors are views into the buckets (no copy in or out)
  bool static_graph = false;            ///< the set of used parameters never changes (DDP's static_graph)
  bool broadcast_buffers = true;        ///< rank 0's buffers (BatchNorm statistics) sent to all before each synced forward
  std::string comm_hook = "allreduce";  ///< allreduce | fp16 (the Reducer's built-in) | bf16 (ours)

  /// The data-parallel knobs of a trial's resolved settings.
  static DdpOptions from(const Settings& s);
};

/// What one step's communication did, on this rank.
struct StepComm {
  int collectives = 0;
  std::int64_t bytes = 0;
  double comm_seconds = 0;              ///< the union of the collectives' intervals
  double overlap_seconds = 0;           ///< the part before the last gradient bucket was launched (hidden by backward)
  std::vector<CommInterval> intervals;  ///< each collective, as the process group recorded it
};

class DataParallel {
 public:
  /// Broadcasts rank 0's parameters and buffers (every rank starts identical, as DDP's constructor does),
  /// builds the buckets and registers the hook. `params` in the order the model defines them.
  DataParallel(Group& group, std::vector<torch::Tensor> params, std::vector<torch::Tensor> buffers, const DdpOptions& o);
  ~DataParallel();

  /// Before the forward of micro-step `micro` of `micro_steps` (the last one synchronises: earlier
  /// ones accumulate locally, DDP's no_sync). Broadcasts buffers before the step's first forward.
  void before_forward(int micro, int micro_steps);
  /// After that forward, before backward: arms the Reducer for the synchronising micro-step.
  void before_backward(int micro, int micro_steps);
  /// After backward: static_graph's first synchronised step reduces everything here (its hooks only
  /// counted); returns this step's communication.
  StepComm after_backward(int micro, int micro_steps);

  /// Buckets as the Reducer holds them now (rebuilt after the first step in gradient order).
  std::vector<std::int64_t> bucket_bytes() const;
  int world() const { return world_; }
  const DdpOptions& options() const { return o_; }
  /// "2 buckets (24.9, 0.8 MB), rebuilt after step 1; comm hook fp16 (Reducer built-in)"
  std::string describe() const;

 private:
  Group& g_;
  DdpOptions o_;
  int world_ = 1;
  std::vector<torch::Tensor> params_, buffers_;
  std::unique_ptr<c10d::Reducer> reducer_;
  bool first_sync_done_ = false;
  bool rebuilt_ = false;
  std::string hook_desc_;
};

/// The bf16 gradient-compression hook (a C++ CommHookInterface; PyTorch's bf16 hook is Python only):
/// each bucket is divided by the world size, cast to bfloat16, allreduced, and cast back.
std::unique_ptr<c10d::CommHookInterface> make_bf16_compress_hook(c10::intrusive_ptr<c10d::ProcessGroup> pg);

/// Sums the union of the intervals, and the part of it before `cutoff`.
StepComm summarize_comm(const std::vector<CommInterval>& v, double cutoff);

}  // namespace autotune::dist
