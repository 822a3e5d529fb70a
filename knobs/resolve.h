#pragma once
// From a knob config to the settings a trial really runs with. One LibTorch-free function, used by
// the tuner (to drop, fold and explain configs before anything runs) and by the worker (to apply):
// a knob that does not apply here, or a value another knob rules out (cuda_graphs=on without fused
// AdamW), falls back to its baseline with the reason — never silently.
#include <cstdint>
#include <string>
#include <vector>

#include "knobs/config.h"
#include "knobs/target.h"

namespace autotune {

/// A knob value that could not be used, and why ("cuda_graphs=on: needs optimizer_impl=fused …; ran with off").
struct SkippedKnob {
  std::string knob, reason;
};

/// Every knob as the worker applies it, typed. Integer knobs are numbers, on/off choices are bools,
/// other choices keep their name. The member list is the catalog's (knobs/knob.cpp), in `visit`.
struct Settings {
  std::int64_t batch_size = 0;  ///< resolved: the workload's default when the config leaves it unset
  std::string threads = "default";
  std::string precision = "fp32";
  std::string optimizer_impl = "loop";
  std::string zero_grad = "zeros";
  int grad_accum = 1;
  int log_every = 1;
  std::string checkpointing = "none";
  std::string memory_format = "contiguous";
  bool pin_memory = false;
  std::string decode = "jpeg_full";
  int num_workers = 0;
  int prefetch = 2;
  std::string augment_device = "cpu";
  bool cuda_graphs = false;
  bool cudnn_benchmark = false;
  int ranks = 1;
  std::int64_t bucket_mb = 25;
  std::int64_t first_bucket_mb = 1;
  bool grad_as_bucket_view = false;
  bool static_graph = false;
  bool broadcast_buffers = true;
  std::string comm_hook = "allreduce";
  std::string compile = "off";  ///< the Python trainer's torch.compile mode (the C++ worker never compiles)

  /// Calls `v(knob name, member)` for every knob.
  template <class V, class S>
  static void visit(V&& v, S& s) {
    v("batch_size", s.batch_size);
    v("threads", s.threads);
    v("precision", s.precision);
    v("optimizer_impl", s.optimizer_impl);
    v("zero_grad", s.zero_grad);
    v("grad_accum", s.grad_accum);
    v("log_every", s.log_every);
    v("checkpointing", s.checkpointing);
    v("memory_format", s.memory_format);
    v("pin_memory", s.pin_memory);
    v("decode", s.decode);
    v("num_workers", s.num_workers);
    v("prefetch", s.prefetch);
    v("augment_device", s.augment_device);
    v("cuda_graphs", s.cuda_graphs);
    v("cudnn_benchmark", s.cudnn_benchmark);
    v("ranks", s.ranks);
    v("bucket_mb", s.bucket_mb);
    v("first_bucket_mb", s.first_bucket_mb);
    v("grad_as_bucket_view", s.grad_as_bucket_view);
    v("static_graph", s.static_graph);
    v("broadcast_buffers", s.broadcast_buffers);
    v("comm_hook", s.comm_hook);
    v("compile", s.compile);
  }
};

struct Resolution {
  Settings settings;
  /// The config as it will run: the requested config with the values that fell back replaced by what
  /// runs instead, and knobs that do not apply here at all left out. Resolving it again changes nothing.
  Config effective;
  std::vector<SkippedKnob> skipped;  ///< each fallback with its reason, in catalog order
};

/// Resolves `config` for `workload` on `target`: per-knob applicability (knobs/knob.h requirements),
/// then the cross-knob rules (resolve.cpp's table). Never throws for a valid config.
Resolution resolve(const Config& config, const WorkloadInfo& workload, const TargetInfo& target);

/// The knobs that can take a value other than their default on `target`: what a profile's verdict may name.
std::vector<std::string> applicable_knobs(const TargetInfo& target);

/// The part of `space` that applies on `target` (knobs and single values that cannot are dropped and
/// listed in `skipped` with the reason), for the tuner to search.
KnobSpace applicable_space(const KnobSpace& space, const TargetInfo& target, std::vector<SkippedKnob>& skipped);

}  // namespace autotune
