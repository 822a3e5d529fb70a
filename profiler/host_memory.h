#pragma once
#include <cstdint>
#include <string>

namespace autotune {

/// Peak resident set size of this process in bytes (VmHWM from /proc/self/status; getrusage as a
/// fallback). Covers every allocation the process touched, LibTorch's CPU allocator included.
std::int64_t peak_rss_bytes();
/// Physical memory of the machine (MemTotal), bytes.
std::int64_t host_total_bytes();
/// The CPU model string from /proc/cpuinfo, "" if unknown.
std::string cpu_model();
/// Makes glibc malloc keep freed memory for reuse instead of handing it back to the kernel: blocks up to
/// 32 MiB (glibc's ceiling for M_MMAP_THRESHOLD) come from the heap rather than fresh mmaps, and the heap
/// top is never trimmed. LibTorch's CPU allocator frees a step's activations and gradients and allocates
/// them again the next step; with glibc's defaults each of those re-allocations is a new mapping that
/// page-faults in zeroed pages (~30,000 minor faults a step for resnet18 at batch 32, 64×64). Idempotent.
/// Returns what was applied, e.g. "glibc malloc: mmap_threshold 32 MiB, trim off", or why not.
std::string retain_freed_host_memory();
/// Minor page faults of this process so far (getrusage ru_minflt).
std::int64_t minor_page_faults();
/// Logical CPUs this process may run on (sched_getaffinity), at least 1.
int usable_cpus();

}  // namespace autotune
