#pragma once
// A Chrome trace in kineto's conventions — what torch.profiler's export_chrome_trace writes, and what
// profiler/trace_export.h writes — read back into an ActivityStream, so the analysis that reads the C++
// worker's CUPTI timeline reads the Python worker's torch.profiler trace (and a user's own) the same way.
//
// Events read (complete events, ph "X"; times in µs, kept to the nanosecond):
//   user_annotation "ProfilerStep#N"          → a "step" range (N its step)
//   user_annotation data|h2d|forward|backward|optimizer|other, on a thread that holds step ranges
//                                             → that phase's range (other annotations are the user's: left out)
//   kernel                                    → kernel (args device, stream, correlation, grid, block)
//   gpu_memcpy "Memcpy HtoD (Pinned -> Device)" → memcpy (args bytes; direction and host memory kind from the
//                                               name, or from args "copy kind" as trace_export writes it)
//   gpu_memset                                → memset
//   cuda_runtime, cuda_driver                 → runtime (args correlation)
//   cuda_sync "Stream Sync" | "Context Sync" | "Event Sync" | "Stream Wait Event"
//                                             → sync, named as profiler/cupti_collector.cpp names them
//   cpu_op with args "Collective name"        → comm ("gloo:allreduce"; args bytes when present)
//   user_annotation "gloo:all_reduce" (the backend's thread, start to completion) → comm "gloo:allreduce"
// deviceProperties names the device of the first GPU record; a GPU record with a zero timestamp counts
// as lost (ActivityStream::zero_timestamps), as the collector counts it.
#include <nlohmann/json_fwd.hpp>

#include <stdexcept>
#include <string>

#include "profiler/activity.h"

namespace autotune::prof {

/// A file that is not a kineto-shaped trace: the message names the file and what is missing.
struct TraceFormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

ActivityStream read_kineto_trace(const nlohmann::json& trace);

/// The file at `path` (plain JSON; a .json.gz is refused with a line saying to gunzip it).
ActivityStream read_kineto_trace_file(const std::string& path);

}  // namespace autotune::prof
