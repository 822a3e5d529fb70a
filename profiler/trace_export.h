#pragma once
// Chrome trace events in kineto's conventions, so the file opens in Perfetto / chrome://tracing and
// loads in Holistic Trace Analysis: complete events (ph "X", µs) with categories cpu_op /
// user_annotation (ProfilerStep#N for steps) / cuda_runtime / kernel / gpu_memcpy / gpu_memset /
// cuda_sync; GPU events on pid = device, tid = stream; args.correlation on runtime and GPU events;
// flow arrows (ac2g) from each launch to its GPU work; process/thread names (M events);
// distributedInfo, deviceProperties, baseTimeNanoseconds.
#include <nlohmann/json.hpp>

#include "profiler/activity.h"

namespace autotune::prof {

nlohmann::json chrome_trace(const ActivityStream& s, int rank = 0, int world_size = 1, const std::string& backend = "nccl");

/// The trace as a file's text, laid out as kineto writes it: `"key": value` with a space after the colon
/// and one event per line, distributedInfo first. HTA (0.5) finds a file's rank with the pattern
/// `"rank":\s+(\d+)` over its lines — compact JSON (`"rank":1`) would load every rank as rank 0.
std::string trace_text(const nlohmann::json& trace);

}  // namespace autotune::prof
