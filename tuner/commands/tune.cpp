// autotune tune: the search, with its outputs.
#include <fmt/format.h>

#include <cstring>

#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>

#include "knobs/error.h"
#include "reports/markdown.h"
#include "reports/run_facts.h"
#include "tuner/exec/trial_runner.h"
#include "tuner/commands/command.h"
#include "tuner/space_file.h"
#include "tuner/tune.h"

namespace autotune::cli {

namespace {

namespace fs = std::filesystem;

struct TuneArgs {
  TrialFlags trial;
  std::vector<std::string> knobs;
  std::string budget = "10m", out_dir, resume_dir, space_file, strategy = "grid";
  int max_trials = 0, confirm_top = TuneOptions{}.confirm_top, confirm_rounds = TuneOptions{}.confirm_rounds;
  double max_noise_pct = 100 * StabilityOptions{}.max_rel_iqr, max_drift_pct = 100 * StabilityOptions{}.max_drift;
  std::int64_t effective_batch = 0;
  std::string calibrate_noise = "on";
  std::string objective = "time";
  double noise_burn_in = -1;
  double noise_scale = 0;
  std::string frontend = "python";
  std::string memory_model = "on";
  std::optional<int> parallel;  ///< not given: 1 for a new run; a resumed run keeps its own
  std::string executor = "local";
  std::string pin = "on";
  int slurm_cpus = 0, slurm_gpus = -1;
  std::int64_t slurm_mem_mb = 0;
  std::vector<std::string> slurm_args;
  bool step_summary = false;
};

void add_flags(CLI::App* c, TuneArgs& a) {
  a.trial.add_to(c);
  c->add_option("--knobs", a.knobs, "search space, e.g. --knobs batch_size=32,64 threads=1,2 (default: the embedded space)");
  c->add_option("--budget", a.budget, "time budget: seconds or 90s, 10m, 1h30m")->capture_default_str();
  c->add_option("--out", a.out_dir, "output folder (default runs/<UTC timestamp>)");
  c->add_option("--resume", a.resume_dir, "continue the run in this folder (its journal fixes workload and space)");
  c->add_option("--space", a.space_file, "search space from a YAML/JSON file (knobs:, optionally workload:, strategy:)");
  c->add_option("--strategy", a.strategy, "grid | random | coordinate | halving | auto")->capture_default_str();
  c->add_option("--max-trials", a.max_trials, "random: configs to sample (default: a third of the grid, at least 4)")
      ->check(CLI::Range(1, 100000));
  c->add_option("--effective-batch", a.effective_batch,
                "hold ranks × batch_size × grad_accum at N (grad_accum follows the other two)")
      ->check(CLI::Range(1, 1 << 24));
  c->add_option("--confirm-top", a.confirm_top, "candidates re-run at the end, interleaved")
      ->capture_default_str()
      ->check(CLI::Range(1, 10));
  c->add_option("--confirm-rounds", a.confirm_rounds, "fresh runs of each candidate (and the baseline) in the confirmation")
      ->capture_default_str()
      ->check(CLI::Range(1, 10));
  c->add_option("--max-noise", a.max_noise_pct, "a trial is noisy above this window IQR/median, in % (re-measured, then rejected)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 100.0));
  c->add_option("--max-drift", a.max_drift_pct, "a trial is still drifting when its last window is this many % off its first")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 100.0));
  c->add_option("--calibrate-noise", a.calibrate_noise,
                "on: raise --max-noise/--max-drift to what this host's own noise produces, measured on the first configs "
                "(at most 4×); off: fixed limits")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  c->add_option("--objective", a.objective,
                "time: the fastest config at your global batch (--effective-batch, else the workload's default), and a "
                "changed batch only when its predicted time to the same loss wins (needs --data); throughput: samples/s")
      ->capture_default_str()
      ->check(CLI::IsMember({"time", "throughput"}));
  c->add_option("--noise-burn-in", a.noise_burn_in,
                "seconds the noise-scale trial trains before it measures (default: 5% of the budget from random weights, 0 "
                "from --init-from or --model weights)")
      ->check(CLI::Range(0.0, 86400.0));
  c->add_option("--noise-scale", a.noise_scale,
                "give the noise scale instead of measuring it (e.g. the value autotune converge implied over a whole run)")
      ->check(CLI::Range(1e-9, 1e18));
  c->add_option("--memory-model", a.memory_model,
                "with --memory-cap: on = predict each config's peak memory first and skip what cannot fit (docs/memory.md); "
                "off = run everything under the cap")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  c->add_option("--frontend", a.frontend,
                "whose defaults the baseline is: python (a torch script: foreach AdamW on CUDA) or libtorch (a C++ one)")
      ->capture_default_str()
      ->check(CLI::IsMember({"python", "libtorch"}));
  c->add_option("--parallel", a.parallel,
                "search trials in flight at once, each in its own slot: disjoint CPU sets (sched_setaffinity, threads "
                "capped), one GPU each on a GPU host; the baseline, verification and confirmation run alone (docs/scale-out.md)");
  c->add_option("--executor", a.executor,
                "where trials run: local (this host), slurm-steps (each trial an srun --exact step of the allocation autotune "
                "runs in), slurm-jobs (each trial an sbatch job); docs/scale-out.md")
      ->capture_default_str();
  c->add_option("--pin", a.pin,
                "local slots: on = each slot its own CPUs (threads capped); off = the slots share the CPUs and may outnumber "
                "them (trials that wait on a GPU or I/O rather than compute)")
      ->capture_default_str()
      ->check(CLI::IsMember({"on", "off"}));
  c->add_option("--trial-cpus", a.slurm_cpus, "Slurm: CPUs per trial (default: steps — the allocation's ÷ --parallel; jobs — 1)");
  c->add_option("--trial-gpus", a.slurm_gpus, "Slurm: GPUs per trial (default: 1 when the allocation has one per slot, else 0)");
  c->add_option("--trial-mem", a.slurm_mem_mb, "Slurm: memory per trial in MB (default: steps — the allocation's ÷ --parallel; jobs — 1024)");
  c->add_option("--slurm-arg", a.slurm_args, "Slurm: one more srun/sbatch argument, e.g. --slurm-arg=--partition=gpu (repeatable)");
  c->add_flag("--summary", a.step_summary, "also append report.md to $GITHUB_STEP_SUMMARY (GitHub Actions job summary)");
}

/// The run's options from the flags (and --space FILE); usage errors before anything starts.
TuneOptions options(TuneArgs& a) {
  TuneOptions t;
  t.setup = a.trial.resolved_setup();
  t.trial_timeout_seconds = a.trial.trial_timeout;
  t.launcher = a.trial.launcher;
  RunnerOptions("", "").launcher(t.launcher);  // a bad template is a usage error before anything runs
  t.worker = a.trial.worker_path();
  t.budget_seconds = parse_duration(a.budget);
  if (!a.space_file.empty()) {
    if (!a.knobs.empty()) throw UsageError("give the search space once: --knobs or --space FILE, not both");
    const SpaceFile f = read_space_file(a.space_file);
    t.space = f.space;
    if (f.workload && a.trial.setup.workload == TrialSetup{}.workload) t.setup.workload = *f.workload;  // --workload wins
    if (f.strategy && a.strategy == "grid") a.strategy = *f.strategy;
  }
  for (const auto& k : a.knobs) t.space.add_assignment(k);
  t.strategy.name = a.strategy;
  t.strategy.seed = t.setup.seed;
  t.strategy.max_trials = a.max_trials;
  t.strategy.effective_batch = a.effective_batch;
  t.confirm_top = a.confirm_top;
  t.confirm_rounds = a.confirm_rounds;
  t.stability.max_rel_iqr = a.max_noise_pct / 100;
  t.stability.max_drift = a.max_drift_pct / 100;
  t.stability.calibrate = a.calibrate_noise == "on";
  t.objective = a.objective;
  t.noise_burn_in = a.noise_burn_in;
  t.noise_scale = a.noise_scale;
  t.frontend = a.frontend;
  t.memory_model = a.memory_model;
  if (a.parallel) {
    if (!a.resume_dir.empty()) throw UsageError("--parallel cannot change a resumed run: its trials ran in the journal's slots");
    t.parallel = *a.parallel;
  }
  t.executor = a.executor;
  t.pin = a.pin == "on";
  t.slurm_cpus = a.slurm_cpus;
  t.slurm_gpus = a.slurm_gpus;
  t.slurm_mem_mb = a.slurm_mem_mb;
  t.slurm_args = a.slurm_args;
  // A bad slot count or executor is refused by run_tune before the run folder exists (tune.cpp, prepared).
  if (!a.resume_dir.empty() && a.executor != "local")
    throw UsageError("--executor cannot change a resumed run: its journal names where its trials ran");
  t.strategy.other_batches = a.objective == "time";
  make_strategy(t.strategy, KnobSpace(), Config(), {});  // unknown strategy: usage error up front
  if (a.effective_batch > 0)
    for (const auto& [k, vs] : t.space.axes())
      if (k == "grad_accum") throw UsageError("--effective-batch sets grad_accum itself; remove grad_accum from the space");
  if (!a.resume_dir.empty()) {
    if (!a.out_dir.empty() && a.out_dir != a.resume_dir)
      throw UsageError("--resume DIR and --out DIR name different folders; give one");
    if (!a.knobs.empty()) throw UsageError("--knobs cannot change a resumed run: its journal fixes the search space");
    t.resume = true;
    t.out_dir = a.resume_dir;
  } else {
    t.out_dir = a.out_dir;
  }
  return t;
}

/// The time objective's two answers in a line each (docs/time-to-train.md), for the terminal.
std::vector<std::string> answer_lines(const RunSummary& s) {
  std::vector<std::string> out;
  if (s.objective != "time") return out;
  if (s.answer_a >= 0)
    out.push_back(fmt::format("(a) at your batch of {}: {} — {:.2f}× the baseline's samples/s, the same training maths",
                              s.user_batch, s.configs[s.answer_a].config.diff_key(s.configs[s.baseline].config),
                              s.answer_a_speedup));
  const TimeAnswer& b = s.answer_b;
  if (b.config >= 0 && b.time_ratio > 0)
    out.push_back(fmt::format("(b) changing the batch to {}: {} — predicted {:.2f}× (a)'s time to the same loss [{:.2f}–{:.2f}× across "
                              "the noise-scale band]{}",
                              b.global_batch, s.configs[b.config].config.diff_key(s.configs[s.baseline].config), b.time_ratio,
                              b.time_ratio_min, b.time_ratio_max,
                              b.lr.given ? fmt::format("; start from lr {:.3g} (Adam-family, √r rule)", b.lr.lr_adam) : ""));
  else if (b.config >= 0)
    out.push_back(fmt::format("(b) not ranked: {} (global batch {}) runs {:.2f}× (a)'s samples/s, but {}", 
                              s.configs[b.config].config.diff_key(s.configs[s.baseline].config), b.global_batch,
                              b.throughput_ratio, s.time_note.empty() ? "time to train could not be predicted" : s.time_note));
  if (s.noise_scale.measured)
    out.push_back(fmt::format("noise scale B_simple {} [{}, {}] — {}", with_commas(s.noise_scale.value), with_commas(s.noise_scale.lo),
                              s.noise_scale.bounded() ? with_commas(s.noise_scale.hi) : "∞",
                              s.noise_scale.early ? "early training (random init): it grows as the loss falls" : "from your weights"));
  return out;
}

int run(TuneArgs& a, std::ostream& o) {
  const TuneOptions t = options(a);
  const std::string what = !t.setup.model.empty()    ? "model " + t.setup.model
                           : !t.setup.plugin.empty() ? fmt::format("workload {} of plugin {}", t.setup.workload, t.setup.plugin)
                                                     : "workload " + t.setup.workload;
  o << fmt::format("autotune tune: {}, strategy {}, budget {}\n", what, t.strategy.name, a.budget) << std::flush;
  const TuneOutcome r = run_tune(t, o);
  o << "\n";
  if (r.interrupted_by) {
    const fs::path dir(r.out_dir);
    o << fmt::format("interrupted by SIG{}: {} trials are kept in {}; the reports show them (marked interrupted)\n",
                     sigabbrev_np(r.interrupted_by) ? sigabbrev_np(r.interrupted_by) : "?", r.summary.trials_run, r.journal_path);
    print_outputs({r.best_json_path, r.report_md_path, (dir / "report.html").string(), (dir / "results.json").string(),
                   (dir / "junit.xml").string(), r.journal_path},
                  o);
    o << fmt::format("continue with: autotune tune --resume {}\n", r.out_dir);
    if (a.step_summary) write_step_summary(r.summary, o);  // a CI runner's SIGTERM still leaves a summary
    return 128 + r.interrupted_by;
  }
  if (r.summary.winner >= 0) {
    const auto& w = r.summary.configs[r.summary.winner];
    // The number the reports lead with: the interleaved confirmation's median when it ran, else the search's.
    const auto& c = r.summary.confirmation;
    if (c.ran && c.median > 0)
      o << fmt::format("winner: {} — {} samples/s in the interleaved confirmation ({} in the search)", changed_knobs(r.summary, w.config),
                       with_commas(c.median), with_commas(w.median));
    else o << fmt::format("winner: {} — {} samples/s", changed_knobs(r.summary, w.config), with_commas(w.median));
    if (r.summary.speedup > 0)
      o << fmt::format(", {:.2f}× the baseline [{:.2f}, {:.2f}]{}", r.summary.speedup, r.summary.speedup_lo, r.summary.speedup_hi,
                       !speedup_not_significant(r.summary) ? "" : r.summary.speedup_hi < 1.0 ? " (slower than the baseline, which was ruled out)" : " (not significant at 95%)");
    o << "\n";
    for (const auto& line : answer_lines(r.summary)) o << line << "\n";
  } else {
    o << "no stable config: see the report for why each was rejected\n";
  }
  const fs::path dir(r.out_dir);
  print_outputs({r.best_json_path, r.report_md_path, (dir / "report.html").string(), (dir / "results.json").string(),
                 (dir / "junit.xml").string(), r.journal_path},
                o);
  if (a.step_summary) write_step_summary(r.summary, o);
  return r.summary.winner >= 0 ? 0 : 1;
}

}  // namespace

Command tune_command() {
  auto a = std::make_shared<TuneArgs>();
  return {"tune",
          "search knob settings, one worker process per trial; writes journal.sqlite, best.json, report.md, report.html, "
          "results.json, junit.xml",
          [a](CLI::App* c) { add_flags(c, *a); }, [a](std::ostream& o) { return run(*a, o); }};
}

}  // namespace autotune::cli
