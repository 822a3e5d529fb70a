#pragma once
// What one trial can use: the device it will run on and what the workload and its data offer. Both
// sides of the process boundary build it with make_target, so the tuner's idea of which knobs apply
// is the worker's.
#include <string>
#include <vector>

#include "knobs/setup.h"
#include "knobs/worker_info.h"

namespace autotune {

struct Knob;

/// What the machine and workload offer; decides which knobs apply.
struct TargetInfo {
  bool cuda = false;  ///< the trial trains on a CUDA device
  int gpu_count = 0;
  int cpu_cores = 1;
  bool conv_model = false;   ///< the workload has convolutions
  bool image_data = false;   ///< the workload reads images
  bool block_model = false;  ///< the model is a stack of blocks (checkpointing applies)
  std::string data;          ///< real data: "" (synthetic), "images" or "tokens" (--data), "task" (a task's dataset())
  bool data_cache = false;   ///< a pre-decoded image cache was given (--cache)
  /// A launcher places the ranks (torchrun, srun, a --launcher template): `ranks` is what it started, not
  /// limited by this process's own cores or GPUs (under `srun -c1` a rank sees one CPU whatever the node has).
  bool launcher_ranks = false;
  /// The Python worker trains it (WorkloadInfo::trainer "python"): every knob but the C++ worker's own
  /// (Requirement::cpp_trainer). A worker that lists the knobs it applies (WorkloadInfo::knobs) applies only
  /// `trainer_knobs` (empty: all).
  bool python_trainer = false;
  std::vector<std::string> trainer_knobs;
  /// Whose defaults an unset knob takes (TrialSetup::defaults_of): "" the catalog's, else PyTorch's for this frontend.
  std::string defaults_of;

  /// The value `knob` takes when a config leaves it unset ("workload" resolved with `workload_default`).
  std::string default_of(const Knob& knob, const std::string& workload_default = "") const;
};

/// The target of a trial of `workload` with `setup` on the machine `env` describes: CUDA when the
/// machine has a device and the setup does not ask for the CPU.
TargetInfo make_target(const WorkloadInfo& workload, const EnvFingerprint& env, const TrialSetup& setup);

}  // namespace autotune
