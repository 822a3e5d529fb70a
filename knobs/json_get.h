#pragma once
// Reading optional JSON members: the readers of plan.json, result.json and the worker's reports
// accept files from older writers, so a missing (or null) member keeps the field's default.
#include <nlohmann/json.hpp>

namespace autotune {

template <class T>
void get_opt(const nlohmann::json& j, const char* key, T& out) {
  if (auto it = j.find(key); it != j.end() && !it->is_null()) it->get_to(out);
}

}  // namespace autotune
