#include "knobs/setup.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "knobs/did_you_mean.h"
#include "knobs/error.h"
#include "knobs/json_get.h"
#include "knobs/memory.h"

namespace autotune {

using nlohmann::json;

namespace {

/// "measure.windows" for a grouped setting, "seed" otherwise: how errors name it.
std::string full_name(const SettingSpec& sp) { return sp.group.empty() ? sp.key : sp.group + "." + sp.key; }

std::string range_text(const Range& r) {
  if (r.hi == std::numeric_limits<double>::infinity()) return fmt::format("≥ {:g}", r.lo);
  return fmt::format("{:g}..{:g}", r.lo, r.hi);
}

}  // namespace

void validate(const TrialSetup& setup) {
  TrialSetup::visit(
      [](const SettingSpec& sp, const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          if (!sp.choices.empty() && std::find(sp.choices.begin(), sp.choices.end(), v) == sp.choices.end())
            throw UsageError(fmt::format("{} '{}' is not allowed; allowed: {}", full_name(sp), v, join(sp.choices)));
          if (sp.size && !v.empty()) parse_size(v, sp.flag.empty() ? full_name(sp) : sp.flag);
        } else if (!sp.valid.contains(static_cast<double>(v))) {
          throw UsageError(fmt::format("{} {} is out of range; allowed: {}", full_name(sp), v, range_text(sp.valid)));
        }
      },
      setup);
}

void to_json(json& j, const TrialSetup& s) {
  if (!j.is_object()) j = json::object();
  const TrialSetup defaults;
  TrialSetup::visit(
      [&](const SettingSpec& sp, const auto& v, const auto& dflt) {
        if (sp.omit_default && v == dflt) return;
        (sp.group.empty() ? j : j[sp.group])[sp.key] = v;
      },
      s, defaults);
}

void from_json(const json& j, TrialSetup& s) {
  TrialSetup::visit(
      [&](const SettingSpec& sp, auto& v) {
        const json* obj = &j;
        if (!sp.group.empty()) {
          auto g = j.find(sp.group);
          if (g == j.end() || !g->is_object()) return;
          obj = &*g;
        }
        auto it = obj->find(sp.key);
        if (it == obj->end() || it->is_null()) return;
        using T = std::decay_t<decltype(v)>;
        const std::string name = full_name(sp);
        try {  // numbers range-checked before they become integers; every error names the setting
          if constexpr (std::is_arithmetic_v<T>) v = json_number<T>(*it, name.c_str());
          else it->get_to(v);
        } catch (const nlohmann::json::exception& e) {
          throw std::runtime_error(fmt::format("'{}': {}", name, json_error_text(e)));
        }
      },
      s);
  validate(s);
}

}  // namespace autotune
