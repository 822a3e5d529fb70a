// autotune-resolve: the knob rules (knobs/resolve.h) as a program, for a worker that is not C++. The Python worker
// (pyworker/autotune_pyworker/settings.py) keeps no catalog, domain or rule of its own: once it has built the model
// and picked its device, it asks this program what the plan's config means there, and applies the answer.
//
//   autotune-resolve < {"plan": plan.json, "workload": describe's workload, "env": info's environment,
//                       "launcher_ranks": false}
//   → {"schema": "autotune.resolution/1", "settings": {knob: value, …}, "effective": {…}, "skipped": [{knob, reason}],
//      "applicable": [knob, …], "target": {…}}
//
// The model flags' grammar has its one home here too (knobs/model_spec.h, parse_input_flag and parse_target_flag):
//
//   autotune-resolve < {"model_flags": {"model_input": "B,64:int64:512", "model_target": "classes:512:B,64"}}
//   → {"inputs": [{"name": "input0", "shape": ["B", 64], "dtype": "int64", "vocab": 512}],
//      "target": {"kind": "classes", "classes": 512, "shape": ["B", 64]}}
//
// And a loss curve's smoothing and time to a target (knobs/converge.h), which the Python worker's stopping rule
// (pyworker/autotune_pyworker/curve.py) must compute alike — for the test that holds it to them:
//
//   autotune-resolve < {"loss_curve": {"points": [[samples, seconds, loss or null], …], "window": 64, "target": 2.5}}
//   → {"smoothed": [loss or null, …], "reached_samples": 128}       (-1: never)
//
// The same functions the tuner and the C++ worker call: make_target, resolve, applicable_knobs. Bad input (not
// JSON, a plan the schema refuses, an unknown knob or value) is one line on stderr and exit 2.
#include <fmt/format.h>

#include <cmath>

#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "knobs/converge.h"
#include "knobs/error.h"
#include "knobs/json_get.h"
#include "knobs/model_spec.h"
#include "knobs/protocol.h"
#include "knobs/resolve.h"
#include "knobs/target.h"

namespace {

using autotune::InputSpec;
using autotune::TargetSpec;

nlohmann::json shape_json(const std::vector<std::int64_t>& shape) {
  nlohmann::json j = nlohmann::json::array();
  for (const std::int64_t d : shape) j.push_back(d < 0 ? nlohmann::json("B") : nlohmann::json(d));
  return j;
}

/// --model-input and --model-target as the spec JSON says them (knobs/model_spec.h): the grammar's one home, for a worker
/// that is not C++.
nlohmann::json model_flags_json(const nlohmann::json& flags) {
  nlohmann::json out = nlohmann::json::object();
  if (const std::string text = flags.value("model_input", ""); !text.empty()) {
    out["inputs"] = nlohmann::json::array();
    for (const InputSpec& i : autotune::parse_input_flag(text)) {
      nlohmann::json j = {{"name", i.name}, {"shape", shape_json(i.shape)}, {"dtype", i.dtype}};
      if (i.dtype == "int64") j["vocab"] = i.vocab;
      else j["range"] = {i.lo, i.hi};
      out["inputs"].push_back(j);
    }
  }
  if (const std::string text = flags.value("model_target", ""); !text.empty()) {
    const TargetSpec t = autotune::parse_target_flag(text);
    nlohmann::json j = {{"kind", t.kind}};
    if (t.kind == "classes") j["classes"] = t.classes;
    if (!t.shape.empty()) j["shape"] = shape_json(t.shape);
    out["target"] = j;
  }
  return out;
}

/// A loss curve smoothed at every point, and where it first reaches the target (knobs/converge.h): what a worker that
/// cannot call knobs/converge.cpp must compute alike (the cross-language test holds it to these numbers).
nlohmann::json loss_curve_json(const nlohmann::json& in) {
  std::vector<autotune::CurvePoint> c;
  for (const auto& p : in.at("points"))
    c.push_back({p.at(0).get<std::int64_t>(), p.at(1).get<double>(), p.at(2).is_null() ? std::nan("") : p.at(2).get<double>()});
  const std::int64_t window = in.at("window").get<std::int64_t>();
  nlohmann::json smoothed = nlohmann::json::array();
  for (std::size_t i = 0; i < c.size(); ++i) {
    const double l = autotune::smoothed_loss(c, i, window);
    smoothed.push_back(autotune::finite_or_null(l));
  }
  return {{"smoothed", smoothed}, {"reached_samples", autotune::time_to_target(c, in.at("target").get<double>(), window).samples}};
}

nlohmann::json resolution_json(const nlohmann::json& in) {
  using namespace autotune;
  if (in.contains("model_flags")) return model_flags_json(in["model_flags"]);
  if (in.contains("loss_curve")) return loss_curve_json(in["loss_curve"]);
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
