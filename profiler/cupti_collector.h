#pragma once
// The one class that owns CUPTI. CUPTI is loaded with dlopen at start(), never linked: the worker
// must start on machines without a driver, and a process must not end up with two CUPTI copies
// (LibTorch's cu130 wheel ships libcupti.so.13; dlopen returns that copy when it is loaded).
// Every CUPTI call goes through one checked helper; a failure is logged and the collector degrades:
// start() returns false with a one-line reason (no CUPTI library, no GPU or driver, another
// profiler — Nsight Systems, ncu, compute-sanitizer, torch.profiler — already subscribed).
#include <cstdint>
#include <string>

#include "profiler/activity.h"

namespace autotune::prof {

class CuptiCollector {
 public:
  CuptiCollector();
  ~CuptiCollector();
  CuptiCollector(const CuptiCollector&) = delete;
  CuptiCollector& operator=(const CuptiCollector&) = delete;

  /// Enables CONCURRENT_KERNEL, MEMCPY, MEMSET, RUNTIME and SYNCHRONIZATION activity. On failure
  /// returns false with `why` (one line) and leaves nothing enabled.
  bool start(std::string& why);
  /// Flushes (forced; synchronise the device before calling), disables and returns the records
  /// since start(), with dropped-record and zero-timestamp counts.
  ActivityStream stop();
  /// CUPTI's clock (ns), to put host ranges on the same timeline; 0 when not started.
  std::int64_t now_ns() const;
  /// Tags the CUDA calls of this thread until pop() with `id` (CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
  /// stop() copies the id onto the runtime records and the GPU work they launched. No-ops when inactive.
  void push(std::uint64_t id);
  void pop();
  bool active() const { return active_; }

 private:
  bool active_ = false;
};

}  // namespace autotune::prof
