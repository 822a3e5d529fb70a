#include "workloads/engine/host_heap.h"

#include <malloc.h>

#include "knobs/host_heap.h"

namespace autotune {

std::string retain_freed_host_memory() {
#if defined(__GLIBC__)
  static const std::string applied = [] {
    const bool mmap_ok =
        mallopt(M_MMAP_THRESHOLD, host_heap::kMmapThresholdBytes) == 1;  // glibc refuses more than 32 MiB (64-bit)
    const bool trim_ok = mallopt(M_TRIM_THRESHOLD, host_heap::kTrimThresholdBytes) == 1;
    if (mmap_ok && trim_ok) return std::string(host_heap::kApplied);
    return std::string("glibc malloc: mallopt refused") + (mmap_ok ? "" : " M_MMAP_THRESHOLD") +
           (trim_ok ? "" : " M_TRIM_THRESHOLD") + "; defaults kept";
  }();
  return applied;
#else
  return "not glibc: the C library's malloc defaults kept";
#endif
}

}  // namespace autotune
