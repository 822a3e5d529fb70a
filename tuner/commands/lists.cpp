// autotune knobs / autotune workloads: what can be tuned, and on what.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>

#include "knobs/did_you_mean.h"
#include "knobs/knob.h"
#include "tuner/commands/command.h"
#include "tuner/exec/trial_runner.h"
#include "tuner/exec/worker_client.h"

namespace autotune::cli {

/// PyTorch 2.11's default of `k` for each frontend and device, with its source (knobs/knob.h).
nlohmann::json pytorch_defaults_json(const Knob& k) {
  nlohmann::json j = nlohmann::json::object();
  for (const char* frontend : {"python", "libtorch"})
    for (const bool cuda : {true, false}) {
      const auto [value, source] = k.pytorch_default(frontend, cuda, "workload");
      j[fmt::format("{}/{}", frontend, cuda ? "cuda" : "cpu")] = {{"value", value}, {"source", source}};
    }
  return j;
}

Command knobs_command() {
  auto json_out = std::make_shared<bool>(false);
  return {"knobs", "list every knob: values, default, where it applies, tip",
          [json_out](CLI::App* c) { c->add_flag("--json", *json_out, "print JSON"); },
          [json_out](std::ostream& o) {
            if (*json_out) {
              nlohmann::json j = nlohmann::json::array();
              for (const auto& k : knob_catalog())
                j.push_back({{"name", k.name},
                             {"values", k.values},
                             {"domain", k.domain_text()},
                             {"default", k.default_value},
                             {"applies", k.applies},
                             {"tip", k.tip},
                             {"pytorch_defaults", pytorch_defaults_json(k)}});
              o << j.dump(2) << "\n";
              return 0;
            }
            for (const auto& k : knob_catalog())
              o << fmt::format("{}\n  values:  {}   (domain: {})\n  default: {}\n  applies: {}\n  tip:     {}\n\n", k.name,
                               join(k.values), k.domain_text(),
                               k.default_value == "workload" ? "the workload's default" : k.default_value, k.applies, k.tip);
            return 0;
          }};
}

Command workloads_command() {
  struct Args {
    bool json = false;
    std::string worker, plugin;
  };
  auto a = std::make_shared<Args>();
  return {"workloads", "list the built-in workloads, or a --plugin's (asks autotune-worker)",
          [a](CLI::App* c) {
            c->add_flag("--json", a->json, "print JSON");
            c->add_option("--worker", a->worker, "autotune-worker binary");
            c->add_option("--plugin", a->plugin, "list the workloads this plugin registers");
          },
          [a](std::ostream& o) {
            // Without the C++ worker (a pip install that did not build it), the Python worker lists the workloads'
            // Python twins, which is what a trial of one would run.
            const std::string worker = !a->worker.empty()                             ? a->worker
                                       : cpp_worker_installed() || !a->plugin.empty() ? default_worker_path()
                                                                                      : python_worker_path();
            const auto ws = query_workloads(worker, absolute(a->plugin));
            if (a->json) {
              o << nlohmann::json(ws).dump(2) << "\n";
              return 0;
            }
            for (const auto& w : ws)
              o << fmt::format("{}\n  {}\n  default batch: {} · {:.3g} FLOP/sample (fwd+bwd) · loss: {} · data: {}{}\n\n", w.name,
                               w.description, w.default_batch_size, w.flops_per_sample, w.loss, w.data,
                               w.conv_model ? " · convolutional" : "");
            return 0;
          }};
}

}  // namespace autotune::cli
