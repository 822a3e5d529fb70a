#include "knobs/config.h"

#include <algorithm>

#include "knobs/did_you_mean.h"
#include "knobs/error.h"
#include "knobs/knob.h"

namespace autotune {

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::pair<std::string, std::string> split_assignment(const std::string& a) {
  const auto eq = a.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == a.size())
    throw UsageError(fmt::format("'{}' is not a knob assignment; expected knob=value, e.g. batch_size=64", a));
  return {trim(a.substr(0, eq)), trim(a.substr(eq + 1))};
}

}  // namespace

std::vector<std::string> split_list(const std::string& text, const std::string& what) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const auto comma = text.find(',', start);
    const std::string item = trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (item.empty()) throw UsageError(fmt::format("{}: empty value in '{}'", what, text));
    out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

Config& Config::set(const std::string& knob, const std::string& value) {
  find_knob(knob).validate(value);
  values_[knob] = value;
  return *this;
}

Config& Config::set_assignment(const std::string& assignment) {
  auto [k, v] = split_assignment(assignment);
  return set(k, v);
}

std::string Config::get(const std::string& knob, const std::string& fallback) const {
  auto it = values_.find(knob);
  return it == values_.end() ? fallback : it->second;
}

std::string Config::key() const {
  std::vector<std::string> parts;
  for (const auto& [k, v] : values_) parts.push_back(k + "=" + v);
  return parts.empty() ? "(defaults)" : join(parts, " ");
}

std::string Config::diff_key(const Config& base) const {
  std::string out;
  for (const auto& [k, v] : values_)
    if (base.get(k) != v) out += (out.empty() ? "" : " ") + k + "=" + v;
  return out.empty() ? "(baseline)" : out;
}

std::string Config::default_of(const std::string& knob, const std::map<std::string, std::string>& defaults,
                               const std::string& workload_batch) {
  const auto it = defaults.find(knob);
  return it != defaults.end() ? it->second : find_knob(knob).baseline(workload_batch);
}

std::string Config::changes_from(const std::map<std::string, std::string>& defaults) const {
  std::string out;
  for (const auto& [k, v] : values_)
    if (v != default_of(k, defaults)) out += (out.empty() ? "" : " ") + k + "=" + v;
  return out.empty() ? "(defaults)" : out;
}

int Config::non_default_count(const std::map<std::string, std::string>& defaults) const {
  int n = 0;
  for (const auto& [k, v] : values_)
    if (v != default_of(k, defaults)) ++n;
  return n;
}

KnobSpace& KnobSpace::add(const std::string& knob, const std::vector<std::string>& values) {
  const Knob& k = find_knob(knob);
  if (values.empty()) throw UsageError(fmt::format("knob '{}': no values given", knob));
  for (size_t i = 0; i < values.size(); ++i) {
    k.validate(values[i]);
    if (std::find(values.begin(), values.begin() + i, values[i]) != values.begin() + i)
      throw UsageError(fmt::format("knob '{}': value '{}' listed twice", knob, values[i]));
  }
  for (auto& axis : axes_)
    if (axis.first == knob) {
      axis.second = values;
      return *this;
    }
  axes_.emplace_back(knob, values);
  return *this;
}

KnobSpace& KnobSpace::add_assignment(const std::string& assignment) {
  auto [k, v] = split_assignment(assignment);
  return add(k, split_list(v, "knob '" + k + "'"));
}

std::size_t KnobSpace::grid_size() const {
  std::size_t n = axes_.empty() ? 0 : 1;
  for (const auto& a : axes_) n *= a.second.size();
  return n;
}

std::vector<Config> KnobSpace::grid() const {
  std::vector<Config> out;
  if (axes_.empty()) return out;
  std::vector<size_t> idx(axes_.size(), 0);
  while (true) {
    Config c;
    for (size_t i = 0; i < axes_.size(); ++i) c.set(axes_[i].first, axes_[i].second[idx[i]]);
    out.push_back(c);
    size_t i = axes_.size();
    while (i > 0) {  // odometer: last axis fastest
      --i;
      if (++idx[i] < axes_[i].second.size()) break;
      idx[i] = 0;
      if (i == 0) return out;
    }
  }
}

std::string KnobSpace::describe() const {
  std::vector<std::string> parts;
  for (const auto& [k, vs] : axes_) parts.push_back(k + "={" + join(vs, ",") + "}");
  return join(parts, " ");
}

}  // namespace autotune
