#pragma once
// Reading optional JSON members: the readers of plan.json, result.json and the worker's reports
// accept files from older writers, so a missing (or null) member keeps the field's default. Numbers
// are range-checked before they become integers: a float such as 1e308 read into an int64 is undefined
// behaviour in C++ (UBSan found it through tests/fuzz), so it is a one-line error instead. And the one
// writer's rule every output shares: JSON has no NaN or infinity, so a non-finite number is written null.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace autotune {

/// `x`, or null when it is not finite (NaN, ±∞): what every writer of ours puts in a JSON file.
inline nlohmann::json finite_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

/// nlohmann's message without its "[json.exception.type_error.302] " prefix.
inline std::string json_error_text(const std::exception& e) {
  std::string s = e.what();
  if (s.rfind("[json.exception.", 0) == 0)
    if (const auto end = s.find("] "); end != std::string::npos) s.erase(0, end + 2);
  return s;
}

/// `v` as T; an integral T takes only numbers that fit (std::runtime_error naming `key` otherwise).
template <class T>
T json_number(const nlohmann::json& v, const char* key) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using L = std::numeric_limits<T>;
    bool fits = true;
    if (v.is_number_float()) {
      const double d = v.get<double>();
      fits = std::isfinite(d) && d >= static_cast<double>(L::min()) && d <= static_cast<double>(L::max());
    } else if (v.is_number_unsigned()) {
      fits = v.get<std::uint64_t>() <= static_cast<std::uint64_t>(L::max());
    } else if (v.is_number_integer()) {
      const std::int64_t i = v.get<std::int64_t>();
      fits = (L::is_signed ? i >= static_cast<std::int64_t>(L::min()) : i >= 0) &&
             static_cast<std::uint64_t>(std::max<std::int64_t>(i, 0)) <= static_cast<std::uint64_t>(L::max());
    }
    if (!fits) throw std::runtime_error(std::string("'") + key + "' " + v.dump() + " is out of range for an integer field");
  }
  return v.get<T>();
}

template <class T>
void get_opt(const nlohmann::json& j, const char* key, T& out) {
  if (auto it = j.find(key); it != j.end() && !it->is_null()) {
    if constexpr (std::is_arithmetic_v<T>) out = json_number<T>(*it, key);
    else it->get_to(out);
  }
}

/// An optional member by value (`fallback` when absent or null), checked as get_opt checks it.
template <class T>
T get_or(const nlohmann::json& j, const char* key, T fallback) {
  get_opt(j, key, fallback);
  return fallback;
}

}  // namespace autotune
