#pragma once
#include <ATen/autocast_mode.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

namespace autotune {

/// RAII autocast region, the C++ counterpart of `with torch.autocast(device, dtype, enabled)`.
/// LibTorch has no guard: autocast state is per thread (TLS) and must be saved and restored by hand.
/// On exit from the outermost region the autocast weight cache is cleared, as Python's context
/// manager does (else casted copies of the weights would outlive the step).
class AutocastGuard {
 public:
  AutocastGuard(c10::DeviceType device, bool enabled, c10::ScalarType dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  c10::DeviceType device_;
  bool prev_enabled_;
  c10::ScalarType prev_dtype_;
};

/// Autocast state of the calling thread, for saving across threads (the autograd engine runs backward
/// on its own threads, which do not inherit the forward's autocast state).
struct AutocastState {
  bool enabled = false;
  c10::ScalarType dtype = c10::ScalarType::Float;
  static AutocastState current(c10::DeviceType device);
};

}  // namespace autotune
