#pragma once
// Where the time goes, from an ActivityStream: HTA's temporal breakdown (GPU busy; idle split into
// host-wait / kernel-wait / other), launch statistics, top kernels, synchronisations per step with
// the API that caused them, copies by direction and host memory kind, MFU against a peak table, and
// a bottleneck verdict naming the knobs that address it.
#include <map>
#include <string>
#include <vector>

#include "knobs/profile.h"
#include "profiler/activity.h"

namespace autotune::prof {

struct AnalysisOptions {
  double flops_per_sample = 0;        ///< the workload's training FLOPs per sample (0: no MFU)
  std::int64_t samples_per_step = 0;  ///< batch × grad_accum
  std::string precision = "fp32";     ///< fp32 | tf32 | amp_bf16 | amp_fp16: which peak applies
  double kernel_wait_ns = 30;         ///< HTA: a gap shorter than this between GPU ops is kernel-wait
};

/// Peak dense FLOP/s for a device and precision, or 0 with `basis` saying why there is none.
double peak_flops(const std::string& device_name, const std::string& precision, std::string& basis);

/// The kind of a GPU kernel, from its (mangled or plain) name, first match, case-insensitive:
/// "communication" (any name holding "nccl", mangled or not; the profile's communication figures use the
/// same rule), "attention" (flash, fmha, attention, sdpa), "matmul / conv" (gemm, nvjet,
/// cutlass, xmma, wgmma, cublas, convolution kernels), "optimizer" (adam, sgd, multi_tensor_apply),
/// "normalization" (batch/layer/group/RMS norm), "softmax / loss" (softmax, nll_loss, cross_entropy),
/// "copy / cast" (copy, cat), "reduction" (reduce), "indexing / embedding" (embedding, index, gather,
/// scatter), "elementwise", else "other". The kernels a step spends its time in tell what bounds MFU.
std::string kernel_class(const std::string& kernel_name);

/// The analysis part of a profile (how the trial was traced is the worker's to fill in).
ProfileSummary analyze(const ActivityStream& s, const AnalysisOptions& o);

}  // namespace autotune::prof
