// autotune-resolve: the knob rules (knobs/resolve.h) as a program, for a worker that is not C++. The Python worker
// (pyworker/autotune_pyworker/settings.py) keeps no catalog, domain or rule of its own: once it has built the model
// and picked its device, it asks this program what the plan's config means there, and applies the answer.
//
//   autotune-resolve < {"plan": plan.json, "workload": describe's workload, "env": info's environment,
//                       "launcher_ranks": false}
//   → {"schema": "autotune.resolution/1", "settings": {knob: value, …}, "effective": {…}, "skipped": [{knob, reason}],
//      "applicable": [knob, …], "target": {…}}
//
// The same functions the tuner and the C++ worker call: make_target, resolve, applicable_knobs. Bad input (not
// JSON, a plan the schema refuses, an unknown knob or value) is one line on stderr and exit 2.
#include <fmt/format.h>

#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "knobs/error.h"
#include "knobs/protocol.h"
#include "knobs/resolve.h"
#include "knobs/target.h"

namespace {

nlohmann::json resolution_json(const nlohmann::json& in) {
  using namespace autotune;
  for (const char* key : {"plan", "workload", "env"})
    if (!in.contains(key) || !in[key].is_object()) throw UsageError(fmt::format("the input has no '{}' object", key));
  const TrialPlan plan = in["plan"].get<TrialPlan>();
  const WorkloadInfo workload = in["workload"].get<WorkloadInfo>();
  const EnvFingerprint env = in["env"].get<EnvFingerprint>();
  TargetInfo target = make_target(workload, env, plan.setup);
  target.launcher_ranks = in.value("launcher_ranks", false);
  const Resolution r = resolve(plan.config, workload, target);
  nlohmann::json settings = nlohmann::json::object();
  Settings::visit([&](const char* name, const auto& member) { settings[name] = member; }, r.settings);
  nlohmann::json skipped = nlohmann::json::array();
  for (const auto& s : r.skipped) skipped.push_back({{"knob", s.knob}, {"reason", s.reason}});
  return {{"schema", "autotune.resolution/1"},
          {"settings", settings},
          {"effective", r.effective},
          {"skipped", skipped},
          {"applicable", applicable_knobs(target)},
          {"target",
           {{"cuda", target.cuda}, {"conv_model", target.conv_model}, {"block_model", target.block_model},
            {"data", target.data}, {"python_trainer", target.python_trainer}, {"defaults_of", target.defaults_of}}}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    std::cerr << "autotune-resolve: takes no arguments; reads {\"plan\", \"workload\", \"env\"} as JSON on stdin\n";
    return 2;
  }
  try {
    const std::string text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    std::cout << resolution_json(nlohmann::json::parse(text)).dump() << "\n";
    return 0;
  } catch (const std::exception& e) {  // parse errors, the schema's refusals, unknown knobs and values
    std::cerr << "autotune-resolve: " << e.what() << "\n";
    return 2;
  }
}
