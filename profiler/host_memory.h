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
/// Minor page faults of this process so far (getrusage ru_minflt).
std::int64_t minor_page_faults();
/// Logical CPUs this process may run on (sched_getaffinity), at least 1.
int usable_cpus();

}  // namespace autotune
