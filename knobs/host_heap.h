#pragma once
// The worker's host-heap policy (workloads/engine/host_heap.cpp applies it before every trial) and the words
// it reports in result.json → memory.host_malloc. Shared so that the reports can tell users exactly what
// to set in their own program: the measured speeds assume it, the baseline's included.

namespace autotune::host_heap {

/// glibc's largest M_MMAP_THRESHOLD on 64-bit: blocks up to this size come from the heap, not fresh mmaps.
inline constexpr int kMmapThresholdBytes = 32 << 20;
/// M_TRIM_THRESHOLD: INT_MAX — the heap top is never handed back to the kernel.
inline constexpr int kTrimThresholdBytes = 2147483647;
/// host_malloc when both mallopt calls took effect.
inline constexpr const char* kApplied = "glibc malloc: mmap_threshold 32 MiB, trim off";

}  // namespace autotune::host_heap
