#include "tuner/options/space_file.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "knobs/did_you_mean.h"
#include "knobs/error.h"

namespace autotune {

SpaceFile read_space_file(const std::string& path) {
  if (!std::filesystem::exists(path)) throw UsageError(fmt::format("--space {}: no such file", path));
  if (std::filesystem::is_directory(path))
    throw UsageError(fmt::format("--space {}: is a directory; give a YAML or JSON file with 'knobs'", path));
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw UsageError(fmt::format("{}:{}: {}", path, e.mark.line + 1, e.msg));
  }
  auto where = [&](const YAML::Node& n) { return fmt::format("{}:{}", path, n.Mark().line + 1); };
  if (!root.IsMap())
    throw UsageError(fmt::format("{}: expected a mapping with 'knobs' (and optionally 'workload', 'strategy')", path));
  const std::vector<std::string> keys = {"workload", "strategy", "knobs"};
  SpaceFile f;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    try {
      if (key == "workload") {
        f.workload = it->second.as<std::string>();
      } else if (key == "strategy") {
        f.strategy = it->second.as<std::string>();
      } else if (key == "knobs") {
        // Nodes are copied into named locals: yaml-cpp's iterator-> returns a temporary proxy, and a
        // range-for over a member of it reads freed stack (AddressSanitizer found it; tests/fuzz).
        const YAML::Node knobs = it->second;
        if (!knobs.IsMap()) throw UsageError("'knobs' must map knob names to lists of values");
        for (auto k = knobs.begin(); k != knobs.end(); ++k) {
          const YAML::Node name = k->first, given = k->second;
          const std::string knob = name.IsScalar() ? name.Scalar() : "?";
          auto scalar = [&](const YAML::Node& v) {
            if (!v.IsScalar())
              throw UsageError(fmt::format("{}: knob '{}': a value must be a number or a word; allowed: a list of them, e.g. "
                                           "{}: [32, 64]",
                                           where(v), knob, knob));
            return v.Scalar();
          };
          std::vector<std::string> values;
          if (given.IsSequence())
            for (const YAML::Node& v : given) values.push_back(scalar(v));
          else values.push_back(scalar(given));
          try {
            f.space.add(name.as<std::string>(), values);
          } catch (const UsageError& e) {
            throw UsageError(fmt::format("{}: {}", where(name), e.what()));
          }
        }
      } else {
        throw UsageError(fmt::format("unknown key '{}'; allowed: {}{}", key, join(keys), did_you_mean(key, keys)));
      }
    } catch (const UsageError& e) {
      const std::string msg = e.what();
      if (msg.rfind(path + ":", 0) == 0) throw;
      throw UsageError(fmt::format("{}: {}", where(it->first), msg));
    } catch (const YAML::Exception& e) {
      throw UsageError(fmt::format("{}: '{}': {}", where(it->first), key, e.msg));
    }
  }
  if (f.space.empty()) throw UsageError(fmt::format("{}: no knobs given; add e.g. knobs: {{batch_size: [32, 64]}}", path));
  return f;
}

}  // namespace autotune
