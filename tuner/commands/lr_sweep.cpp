// autotune lr-sweep: the learning rate measured, not assumed — every rate of the rule trained from the same weights on
// the same data (tuner/converge/lr_sweep_run.h trains, tuner/pricing/lr_sweep.h judges, reports/lr_sweep_report.h writes).
#include <fmt/format.h>

#include <memory>
#include <ostream>

#include "knobs/error.h"
#include "reports/lr_sweep_report.h"
#include "tuner/commands/command.h"
#include "tuner/commands/range_check.h"
#include "tuner/converge/lr_sweep_run.h"
#include "tuner/exec/interrupt.h"
#include "tuner/pricing/run_length.h"

namespace autotune::cli {

namespace {

struct LrSweepArgs {
  TrialFlags trial;
  LrSweepOptions o;
  std::vector<std::string> sets;
  std::string run_length;
  std::string held_out = "on";
  std::string arms_from = "start";
};

void add_flags(CLI::App* c, LrSweepArgs& a) {
  a.trial.add_to(c);
  c->add_option("--set", a.sets, "knob=value of the config every rate trains (repeatable; default: the defaults)");
  c->add_option("--from-run", a.o.from_run,
                "a tune run folder: its setup (workload, data, seed, rate; --lr overrides) and the config --at names");
  c->add_option("--at", a.o.at,
                "with --from-run: your-batch (its baseline at your rate) or changed-batch (its answer (b) at the batch rule's "
                "rate for it: the sweep checks the rule)")
      ->capture_default_str()
      ->check(CLI::IsMember({"your-batch", "changed-batch"}));
  c->add_option("--run-length", a.run_length,
                "your training's length in samples, epochs or tokens (500000, 3epochs, 2.5e9tokens; epochs read the data's "
                "size with a one-step probe first): each rate trains the first 15% of it from your start (from a checkpoint: "
                "a burn-in of 5%, then 10% each); default: the smoothing windows alone decide");
  c->add_option("--horizon-share", a.o.rule.horizon_share,
                "the share of your run each rate trains past its first 5% (from your start: 5% + this): a deeper horizon "
                "sees more of how the gain moves with depth, at its cost in every rate")
      ->capture_default_str()
      ->check(within(0.01, 1.0));
  c->add_option("--arms-from", a.arms_from,
                "where every rate starts: start (the weights your run starts from) or checkpoint (your rate's, after a burn-in: "
                "a change of rate part-way through the run, which favours a lower rate)")
      ->capture_default_str()
      ->check(CLI::IsMember({"start", "checkpoint"}));
  c->add_option("--orders", a.o.orders, "each rate on this many data orders (the run-to-run spread)")
      ->capture_default_str()
      ->check(within(1, 10));
  c->add_option("--seconds", a.o.max_seconds, "a run's wall-time cap (a rate cut short by it is never picked)")
      ->capture_default_str()
      ->check(within(1.0, 86400.0));
  c->add_option("--smooth-samples", a.o.smooth_samples,
                "the loss is smoothed over this many samples (default: 8 × the global batch, at least 1,024)")
      ->check(within(1, 1 << 30));
  c->add_option("--held-out", a.held_out,
                "on: where there is held-out data (a task's val_dataset(), or --val-data) every rate is judged by its "
                "held-out loss at the horizon as well; off: the training loss alone")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  c->add_option("--val-data", a.o.val_data, "held-out data in --data's form (the Python worker), for the held-out judge");
  c->add_option("--val-samples", a.o.val_samples, "held-out samples each evaluation averages")
      ->capture_default_str()
      ->check(within(1, 1 << 30));
  c->add_option("--out", a.o.out_dir, "output folder (default runs/lr-sweep-<UTC timestamp>; must not hold anything)");
}

int run(LrSweepArgs& a, std::ostream& out) {
  install_interrupt_handlers();
  LrSweepOptions o = a.o;
  o.setup = a.trial.resolved_setup();
  o.worker = a.trial.worker;
  if (!a.o.from_run.empty() && !a.sets.empty())
    throw UsageError("--set does not combine with --from-run: the sweep trains the run's own config (--at names which)");
  if (!a.o.from_run.empty()) a.trial.refuse_setup_beside("--from-run", {"--lr"});
  if (a.o.from_run.empty() && a.o.at != "your-batch")
    throw UsageError(fmt::format("--at {}: needs --from-run (a tune run whose answer (b) names the batch)", a.o.at));
  if (a.o.from_run.empty()) a.trial.check(o.setup);
  for (const auto& kv : a.sets) o.config.set_assignment(kv);
  o.run_length = parse_run_length(a.run_length);
  o.held_out = a.held_out == "on";
  o.rule.from_start = a.arms_from == "start";
  out << fmt::format("autotune lr-sweep: each rate on {} data order(s), at most {:g} s a run\n", o.orders, o.max_seconds)
      << std::flush;
  const LrSweepSummary s = run_lr_sweep(o, out);
  out << "\n" << lr_sweep_headline(s) << "\n";
  if (s.held_out.on()) out << "Held out: " << s.held_out.reason << "\n";
  print_outputs({s.out_dir + "/lr-sweep.md", s.out_dir + "/lr-sweep.json", s.out_dir + "/journal.sqlite"}, out);
  return 0;
}

}  // namespace

Command lr_sweep_command() {
  auto a = std::make_shared<LrSweepArgs>();
  return {"lr-sweep",
          "the learning rate measured: ×1/3, ×1, ×3, ×10 your rate (widened while the best sits at an end), each trained from "
          "your start on the same data for a stated share of your run; says whether your rate is too low, about right or "
          "too high, with the time it costs; writes lr-sweep.md, lr-sweep.json",
          [a](CLI::App* c) { add_flags(c, *a); }, [a](std::ostream& o) { return run(*a, o); }};
}

}  // namespace autotune::cli
