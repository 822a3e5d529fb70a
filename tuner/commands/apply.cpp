// autotune apply: the how-to-apply snippets of one config (the report's, for a config you name), so that
// a config can be taken into a training script without a tune: `autotune apply --model m.pt --set ranks=2`.
#include <fmt/format.h>

#include <memory>
#include <ostream>

#include "knobs/error.h"
#include "knobs/knob.h"
#include "reports/apply.h"
#include "tuner/commands/command.h"
#include "tuner/exec/worker_client.h"

namespace autotune::cli {

namespace {

struct ApplyArgs {
  TrialFlags trial;
  std::vector<std::string> set;
  std::string frontend = "python";
  std::string lang = "python";
};

int run(const ApplyArgs& a, std::ostream& o) {
  const TrialPlan plan = a.trial.plan(a.set);
  a.trial.check(plan.setup);
  const WorkloadInfo w = describe_workload(a.trial.worker_path(), plan.setup);
  // --device auto: the snippets are for the device this machine would train on.
  const std::string device = plan.setup.device != "auto" ? plan.setup.device
                             : query_environment(a.trial.worker_path()).cuda_available ? "cuda"
                                                                                       : "cpu";
  // What the config changes is measured against PyTorch's defaults for this frontend and device, as in a tune.
  std::map<std::string, std::string> defaults;
  const std::string wd = std::to_string(w.default_batch_size);
  for (const Knob& k : knob_catalog()) defaults[k.name] = k.pytorch_default(a.frontend, device == "cuda", wd).first;
  const ApplySnippets s = apply_snippets(plan.config, device, defaults, apply_subject(w));
  const auto& lines = a.lang == "cpp" ? s.cpp : s.python;
  if (lines.empty()) {
    o << fmt::format("{} {}: nothing to change from PyTorch's defaults for a {} script\n", w.name, plan.config.key(),
                     a.frontend == "python" ? "Python" : "LibTorch");
    return 0;
  }
  o << fmt::format("{} {} {} ({} on {}: what differs from PyTorch 2.11's defaults)\n", a.lang == "cpp" ? "//" : "#", w.name,
                   plan.config.key(), a.lang == "cpp" ? "LibTorch" : "Python", device);
  for (const auto& l : lines) o << l << "\n";
  return 0;
}

}  // namespace

Command apply_command() {
  auto a = std::make_shared<ApplyArgs>();
  return {"apply", "print how to apply one config in your own training script (the report's snippets)",
          [a](CLI::App* c) {
            a->trial.add_to(c);
            c->add_option("--set", a->set, "knob=value (repeatable), e.g. --set ranks=2 --set batch_size=64");
            c->add_option("--frontend", a->frontend, "whose defaults the config is compared with")
                ->check(CLI::IsMember({"python", "libtorch"}))
                ->capture_default_str();
            c->add_option("--lang", a->lang, "python | cpp")->check(CLI::IsMember({"python", "cpp"}))->capture_default_str();
          },
          [a](std::ostream& o) { return run(*a, o); }};
}

}  // namespace autotune::cli
