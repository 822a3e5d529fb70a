// autotune apply: the how-to-apply snippets of one config (the report's, for a config you name), so that
// a config can be taken into a training script without a tune: `autotune apply --model m.pt --set ranks=2`.
#include <fmt/format.h>

#include <cmath>
#include <memory>
#include <ostream>
#include <sstream>

#include "knobs/error.h"
#include "knobs/knob.h"
#include "knobs/model_spec.h"
#include "reports/apply.h"
#include "reports/ramp_facts.h"
#include "reports/run_facts.h"
#include "tuner/commands/command.h"
#include "tuner/commands/range_check.h"
#include "tuner/pricing/ramp_phases.h"
#include "tuner/summary/summarize.h"
#include "tuner/exec/worker_client.h"

namespace autotune::cli {

namespace {

struct ApplyArgs {
  TrialFlags trial;
  std::vector<std::string> set;
  std::string frontend = "python";
  std::string lang = "python";
  std::string from_run;
  int config = 0;  ///< --from-run: the report's config number (its All trials table); 0 = the winner
  bool ramp = false;         ///< --from-run: answer (c), the run's batch ramp, instead of a config
  std::string ramp_phases;   ///< --set: a ramp of your own, "SAMPLES:GRAD_ACCUM:LR,…"
};

/// What the snippets are of: a config, the defaults it is compared with, the model and the device.
struct Subject {
  Config config;
  std::map<std::string, std::string> defaults;
  WorkloadInfo workload;
  std::string device, frontend;
  LrHint lr;
  std::vector<RampStep> ramp;
};

/// A config named on the command line (--set), against PyTorch's defaults for --frontend on this machine's device.
Subject from_flags(const ApplyArgs& a) {
  const TrialPlan plan = a.trial.plan(a.set);
  Subject s;
  s.config = plan.config;
  s.workload = a.trial.check(plan.setup);
  // --device auto: the snippets are for the device this machine would train on.
  s.device = plan.setup.device != "auto" ? plan.setup.device
             : query_environment(a.trial.worker_path()).cuda_available ? "cuda"
                                                                       : "cpu";
  s.frontend = a.frontend;
  const std::string wd = std::to_string(s.workload.default_batch_size);
  for (const Knob& k : knob_catalog()) s.defaults[k.name] = k.pytorch_default(a.frontend, s.device == "cuda", wd).first;
  return s;
}

/// A tune's winner, or config N of its report, against that run's own baseline: the report's snippets.
Subject from_run(const ApplyArgs& a) {
  const RunSummary r = load_run_summary(a.from_run);
  const int n = static_cast<int>(r.configs.size());
  if (a.config > n)
    throw UsageError(fmt::format("--config {}: the run in {} measured {} configs; allowed: 1..{} (its report's All trials "
                                 "table), or no --config for the winner",
                                 a.config, a.from_run, n, n));
  if (a.config == 0 && r.winner < 0)
    throw UsageError(fmt::format("{}: the run found no stable config, so it has no winner; name one with --config 1..{}",
                                 a.from_run, n));
  const int i = a.config > 0 ? a.config - 1 : r.winner;
  Subject s;
  s.config = r.configs[i].config;
  s.defaults = baseline_defaults(r);
  s.workload = r.workload;
  s.device = r.env.cuda_available ? "cuda" : "cpu";
  s.frontend = r.frontend.empty() ? "python" : r.frontend;
  if (i == r.winner) s.lr = lr_hint(r);  // the LR advice is the winner's (its batch against the baseline's)
  if (a.ramp) {
    if (!r.answer_c.proposed)
      throw UsageError(fmt::format("--ramp: the run in {} has no batch ramp ({}); its report's answer (c) says why", a.from_run,
                                   r.answer_c.note.empty() ? "it did not rank by time to train" : r.answer_c.note));
    s.config = r.configs[r.answer_c.phases.front().config].config;  // the micro-batch and knobs every phase keeps
    s.lr = {};
    s.ramp = ramp_steps(r);
  }
  return s;
}

int run(const ApplyArgs& a, std::ostream& o) {
  if (!a.from_run.empty() && !a.set.empty())
    throw UsageError("give the config once: --from-run DIR (its winner, or --config N) or --set knob=value, not both");
  if (a.config > 0 && a.from_run.empty()) throw UsageError("--config N names a config of a run: give --from-run DIR too");
  if (a.ramp && a.from_run.empty()) throw UsageError("--ramp prints a run's batch ramp: give --from-run DIR too (or --ramp-phases with --set)");
  if (a.ramp && a.config > 0) throw UsageError("--ramp prints the run's batch ramp, whose phases are its configs: leave out --config");
  if (!a.ramp_phases.empty() && !a.from_run.empty())
    throw UsageError("--ramp-phases is a ramp of your own over the config of --set; with --from-run use --ramp (the run's own)");
  const std::vector<RampStep> hand = a.ramp_phases.empty() ? std::vector<RampStep>{} : parse_ramp_phases(a.ramp_phases, true);
  const auto python_task = [&](const std::string& task) {
    if (!task.empty() && a.lang == "cpp")
      throw UsageError(fmt::format("--lang cpp: the task {} is Python; its loop is printed in Python (--lang python)", task));
  };
  if (a.from_run.empty()) python_task(task_of(a.trial.resolved_setup().model));  // before the worker is asked anything
  Subject s = a.from_run.empty() ? from_flags(a) : from_run(a);
  if (!hand.empty()) s.ramp = hand;
  python_task(s.workload.python_task);
  const ApplySnippets snip = apply_snippets(s.config, s.device, s.defaults, apply_subject(s.workload), s.lr, s.ramp);
  const auto& lines = a.lang == "cpp" ? snip.cpp : snip.python;
  if (lines.empty()) {
    o << fmt::format("{} {}: nothing to change from PyTorch's defaults for a {} script\n", s.workload.name, s.config.key(),
                     s.frontend == "python" ? "Python" : "LibTorch");
    return 0;
  }
  o << fmt::format("{} {} {} ({} on {}: what differs from PyTorch 2.11's defaults)\n", a.lang == "cpp" ? "//" : "#",
                   s.workload.name, s.config.key(), a.lang == "cpp" ? "LibTorch" : "Python", s.device);
  for (const auto& l : lines) o << l << "\n";
  return 0;
}

}  // namespace

Command apply_command() {
  auto a = std::make_shared<ApplyArgs>();
  return {"apply", "print how to apply one config in your own training script (the report's snippets)",
          [a](CLI::App* c) {
            a->trial.add_to(c, TrialFlags::Set::model);
            c->add_option("--set", a->set, "knob=value (repeatable), e.g. --set ranks=2 --set batch_size=64");
            c->add_option("--from-run", a->from_run, "a tune's folder: its winner's snippets, as its report prints them");
            c->add_option("--config", a->config, "with --from-run: config N of the report's All trials table instead of the winner")
                ->check(within(1, 1e6));
            c->add_flag("--ramp", a->ramp, "with --from-run: the run's batch ramp (answer c) as your training loop");
            c->add_option("--ramp-phases", a->ramp_phases,
                          "with --set: a batch ramp of your own, SAMPLES:GRAD_ACCUM:LR,… (the micro-batch is batch_size)");
            c->add_option("--frontend", a->frontend, "whose defaults the config is compared with")
                ->check(CLI::IsMember({"python", "libtorch"}))
                ->capture_default_str();
            c->add_option("--lang", a->lang, "python | cpp")->check(CLI::IsMember({"python", "cpp"}))->capture_default_str();
          },
          [a](std::ostream& o) { return run(*a, o); }};
}

}  // namespace autotune::cli
