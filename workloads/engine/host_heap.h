#pragma once
// The worker's host-heap policy: part of the engine, applied before every trial (the baseline's
// included), so that a training step's re-allocations do not page-fault. knobs/host_heap.h holds its
// constants, which the reports quote when they tell users how to get the same policy.
#include <string>

namespace autotune {

/// Makes glibc malloc keep freed memory for reuse instead of handing it back to the kernel: blocks up to
/// 32 MiB (glibc's ceiling for M_MMAP_THRESHOLD) come from the heap rather than fresh mmaps, and the heap
/// top is never trimmed. LibTorch's CPU allocator frees a step's activations and gradients and allocates
/// them again the next step; with glibc's defaults each of those re-allocations is a new mapping that
/// page-faults in zeroed pages (~30,000 minor faults a step for resnet18 at batch 32, 64×64). Idempotent.
/// Returns what was applied, e.g. "glibc malloc: mmap_threshold 32 MiB, trim off", or why not.
std::string retain_freed_host_memory();

}  // namespace autotune
