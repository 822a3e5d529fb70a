#include "workloads/engine/autocast.h"

namespace autotune {

AutocastGuard::AutocastGuard(c10::DeviceType device, bool enabled, c10::ScalarType dtype)
    : device_(device),
      prev_enabled_(at::autocast::is_autocast_enabled(device)),
      prev_dtype_(at::autocast::get_autocast_dtype(device)) {
  at::autocast::set_autocast_enabled(device_, enabled);
  at::autocast::set_autocast_dtype(device_, dtype);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(device_, prev_enabled_);
  at::autocast::set_autocast_dtype(device_, prev_dtype_);
}

AutocastState AutocastState::current(c10::DeviceType device) {
  return {at::autocast::is_autocast_enabled(device), at::autocast::get_autocast_dtype(device)};
}

}  // namespace autotune
