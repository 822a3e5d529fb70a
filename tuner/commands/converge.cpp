// autotune converge: trains the baseline and the candidates to the same loss and compares the measured time
// with the predicted one (tuner/converge/converge.h decides; reports/converge_report.h writes).
#include <fmt/format.h>

#include <memory>
#include <ostream>

#include "reports/batch_norm_note.h"
#include "reports/converge_report.h"
#include "reports/held_out_report.h"
#include "tuner/commands/command.h"
#include "tuner/commands/range_check.h"
#include "tuner/converge/converge.h"
#include "tuner/exec/interrupt.h"
#include "tuner/pricing/ramp_phases.h"

namespace autotune::cli {

namespace {

struct ConvergeArgs {
  TrialFlags trial;
  ConvergeOptions o;
  std::vector<std::string> baseline_set, candidate_set;
  std::string ramp_phases;
};

void add_flags(CLI::App* c, ConvergeArgs& a) {
  a.trial.add_to(c);
  c->add_option("--from-run", a.o.from_run,
                "a tune run folder: its baseline, its configs named by --compare and its noise scale (its trial setup too: "
                "workload, --data, --seed; --lr overrides)");
  c->add_option("--from-sweep", a.o.from_sweep,
                "an lr-sweep folder: your rate against the sweep's best (its runner-up when yours was about right), on its "
                "config and data, predicted at the gain the sweep measured");
  c->add_option("--compare", a.o.compare,
                "with --from-run: which configs to train (pick, changed-batch, at-your-batch, fastest, ramp)")
      ->capture_default_str()
      ->delimiter(',');
  c->add_option("--baseline-set", a.baseline_set, "without --from-run: knob=value of the baseline (repeatable; default: defaults)");
  c->add_option("--candidate-set", a.candidate_set, "without --from-run: knob=value of the candidate (repeatable)");
  c->add_option("--ramp-phases", a.ramp_phases,
                "a batch ramp of your own as one more arm: the baseline's config with SAMPLES:GRAD_ACCUM[:LR],… (lr left out: "
                "the run's lr × √r at that batch)");
  c->add_option("--noise-scale", a.o.noise_scale, "B̄ for the prediction (default: the tune run's measured one)")
      ->check(within(1e-9, 1e18));
  c->add_option("--seconds", a.o.seconds, "each run trains at most this long (equal wall time)")
      ->capture_default_str()
      ->check(within(1.0, 86400.0));
  c->add_option("--baseline-samples", a.o.baseline_samples,
                "the baseline's runs stop after this many samples, your run's length: the common target is then the loss "
                "your run ends at (default: with --from-sweep, the sweep's --run-length; 0: equal wall time only)")
      ->check(within(0.0, 1e15));
  c->add_option("--target-loss", a.o.target_loss,
                "train each run to this smoothed training loss (default: equal wall time, target = the worst final loss)")
      ->check(within(1e-12, 1e12));
  c->add_option("--reruns", a.o.reruns, "the baseline again on this many other data orders (the run-to-run spread ε)")
      ->capture_default_str()
      ->check(within(0, 20));
  c->add_option("--adam-rule", a.o.adam_rule,
                "a changed batch's AdamW β1, β2, ε: none = kept (lr × √r only); sde = Adam's square-root scaling rule, "
                "1 − β × κ and ε ÷ √κ for κ = B/B0")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "sde"}));
  c->add_option("--arm-orders", a.o.arm_orders,
                "each candidate on this many data orders (0, 1, …): every measured ratio then carries an interval of its own")
      ->capture_default_str()
      ->check(within(1, 10));
  c->add_option("--smooth-samples", a.o.smooth_samples, "the loss is smoothed over this many samples (default: 8 × the largest "
                                                        "global batch, at least 1,024)")
      ->check(within(1, 1 << 30));
  c->add_option("--val-data", a.o.val_data,
                "held-out data in --data's form (an image folder, a token file; the Python worker): converge also times each "
                "run to a held-out loss (a task's own held-out samples come from its val_dataset())");
  c->add_option("--val-every", a.o.val_every,
                "samples trained between held-out evaluations (0: none; default: 2 × the smoothing window where there is "
                "held-out data)")
      ->check(within(0, std::int64_t{1} << 40));
  c->add_option("--val-samples", a.o.val_samples, "held-out samples per evaluation (the first ones, the same each time)")
      ->capture_default_str()
      ->check(within(1, 1 << 30));
  c->add_option("--save", a.o.save, "write the baseline's trained weights here (for a later --init-from; never overwritten)");
  c->add_option("--out", a.o.out_dir, "output folder (default runs/converge-<UTC timestamp>; must not hold anything)");
}

int run(ConvergeArgs& a, std::ostream& out) {
  install_interrupt_handlers();
  ConvergeOptions o = a.o;
  o.setup = a.trial.resolved_setup();
  o.worker = a.trial.worker;  // "": the model's own worker, once --from-run has named the model (tuner/converge/converge.cpp)
  o.save = absolute(o.save);
  o.val_data = absolute(o.val_data);
  if (!a.o.from_run.empty()) a.trial.refuse_setup_beside("--from-run", {"--lr"});  // --lr: the user's rate
  if (!a.o.from_sweep.empty()) a.trial.refuse_setup_beside("--from-sweep", {});  // the sweep's rates are the ones trained
  if (a.o.from_run.empty() && a.o.from_sweep.empty()) a.trial.check(o.setup);
  for (const auto& kv : a.baseline_set) o.baseline.set_assignment(kv);
  if (!a.candidate_set.empty()) {
    Config c = o.baseline;
    for (const auto& kv : a.candidate_set) c.set_assignment(kv);
    o.candidates.push_back(c);
  }
  if (!a.ramp_phases.empty()) o.hand_ramp = parse_ramp_phases(a.ramp_phases, /*lr_required=*/false);
  out << fmt::format("autotune converge: {}{}{} s per run, {} baseline re-run(s)\n",
                     o.from_run.empty() ? "" : "configs of " + o.from_run + ", ",
                     o.from_sweep.empty() ? "" : "rates of " + o.from_sweep + ", ", o.seconds, o.reruns)
      << std::flush;
  const ConvergeSummary s = run_converge(o, out);
  out << "\n";
  for (const auto& c : s.comparisons)
    out << comparison_sentence(s, c, [](const std::string& x) { return x; }) << "\n";
  if (const std::string note = batch_norm_note(s); !note.empty()) out << note << "\n";
  const std::vector<std::string> held = held_out_sentences(s);
  for (std::size_t i = 1; i < held.size(); ++i) out << held[i] << "\n";  // the verdict and each comparison's held-out ratio
  print_outputs({s.out_dir + "/converge.md", s.out_dir + "/converge.html", s.out_dir + "/converge.json",
                 s.out_dir + "/journal.sqlite"},
                out);
  return 0;
}

}  // namespace

Command converge_command() {
  auto a = std::make_shared<ConvergeArgs>();
  return {"converge",
          "train the baseline and a tune's pick (or any config) to the same loss from the same weights and data order: the "
          "measured time to the loss next to the predicted one; writes converge.md, converge.html, converge.json",
          [a](CLI::App* c) { add_flags(c, *a); }, [a](std::ostream& o) { return run(*a, o); }};
}

}  // namespace autotune::cli
