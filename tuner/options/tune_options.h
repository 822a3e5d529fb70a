#pragma once
// What `autotune tune` is asked to do: the trial setup every trial shares (knobs/setup.h), the space,
// the strategy, the budget and the thresholds. Every run option is one row of TuneOptions::visit — its JSON
// key in the journal (meta.options), its CLI flag and help, its range or words, what a journal from before the
// option existed reads, and whether a resumed run may be given it. The CLI flags of `autotune tune`, the journal's
// round trip and the resume check all read that table, so a new option is one member and one row
// (docs/design.md, "Adding a tune option").
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "knobs/config.h"
#include "knobs/setup.h"
#include "knobs/worker_info.h"
#include "tuner/exec/plan.h"
#include "tuner/search/objective_kind.h"
#include "tuner/search/ranking.h"
#include "tuner/search/stability.h"
#include "tuner/search/strategy.h"

namespace autotune {

/// How one run option is named and checked where it crosses a boundary (the CLI, the journal, a resume). Built
/// in the table below with chained setters: OptionSpec("confirm_top", "--confirm-top", "help").range(1, 10).
struct OptionSpec {
  std::string key;                   ///< JSON key in meta.options
  std::string flag;                  ///< `autotune tune`'s flag ("" = none: the run sets it, or another table's flag)
  std::string help;                  ///< the flag's help line
  Range allowed;                     ///< the flag's range, in the flag's units
  std::vector<std::string> choices;  ///< the words a string option (or an enum's flag) may take; empty = any
  double flag_scale = 1;             ///< the flag's value ÷ this is the stored one (percent() : 100)
  bool on_off = false;               ///< a bool written on|off on the command line
  bool show_default = false;         ///< the help line shows the default
  /// What a journal from before the option existed reads, as JSON text ("false", "\"catalog\""); "" = the
  /// member's default; required() = such a journal cannot be read.
  std::string before;
  bool must_be_stored = false;
  /// Why a resumed run refuses the flag (its journal fixes the value); "" = the value is this invocation's.
  std::string fixed_on_resume;

  explicit OptionSpec(std::string key_, std::string flag_ = "", std::string help_ = "")
      : key(std::move(key_)), flag(std::move(flag_)), help(std::move(help_)) {}
  OptionSpec& range(double lo, double hi) {
    allowed = {lo, hi};
    return *this;
  }
  OptionSpec& one_of(std::vector<std::string> c) {
    choices = std::move(c);
    return *this;
  }
  OptionSpec& percent() {
    flag_scale = 100;
    return *this;
  }
  OptionSpec& on_off_flag() {
    on_off = true;
    return *this;
  }
  OptionSpec& with_default() {
    show_default = true;
    return *this;
  }
  OptionSpec& stored_before(std::string json_text) {
    before = std::move(json_text);
    return *this;
  }
  OptionSpec& required() {
    must_be_stored = true;
    return *this;
  }
  OptionSpec& fixed_by_journal(std::string why) {
    fixed_on_resume = std::move(why);
    return *this;
  }
};

/// Everything `autotune tune` needs; defaults are the embedded default run (grid over batch × threads).
struct TuneOptions {
  TrialSetup setup;             ///< shared by every trial of the run: workload, device, seed, data, measurement
  KnobSpace space;              ///< empty → the embedded default: batch_size {32,64,128,256} × threads {1,2}
  double budget_seconds = 600;  ///< the search stops proposing trials that would not fit
  std::string out_dir;          ///< "" → runs/<UTC timestamp>
  bool resume = false;          ///< continue the run in out_dir (its journal decides workload and space)
  double trial_timeout_seconds = 600;
  std::string launcher = "local";  ///< trials with ranks > 1 (RunnerOptions::launcher)
  /// Where trials run (tuner/exec/plan.h): the executor, the slots of --parallel N (every trial then runs in one
  /// slot's share — a data-parallel one on the whole host, alone — and the serial phases with nothing beside
  /// them), and the Slurm resources.
  ExecOptions exec;
  std::string worker;  ///< "" → default_worker_path()
  StabilityOptions stability;
  StrategyOptions strategy;  ///< grid by default
  int confirm_top = 2;       ///< candidates re-run at the end, interleaved (A B A B …)
  int confirm_rounds = 2;    ///< fresh runs per candidate in the confirmation
  /// What "fastest" means (tuner/search/ranking.h): time — predicted time to the same loss, holding the user's batch
  /// and pricing a changed one by the measured noise scale — or throughput (samples/s). Journals from before the
  /// time objective existed resume and report as throughput.
  ObjectiveKind objective = ObjectiveKind::time;
  /// The baseline is "what a plain training script does": PyTorch 2.11's defaults of the user's frontend
  /// ("python": torch.optim picks foreach AdamW on CUDA; "libtorch": the per-parameter loop), each sourced
  /// (`baseline_defaults` "pytorch-2.11"). Journals from before read "catalog": the catalog's first values,
  /// zero_grad=zeros and the loop everywhere, as they ran.
  std::string frontend = "python";
  /// With --memory-cap: "on" predicts each config's peak before it runs and skips what cannot fit
  /// (tuner/memory/model.h); "off" runs everything under the cap (an OOM is found by running it).
  std::string memory_model = "on";
  std::string baseline_defaults = "pytorch-2.11";
  /// Whether the user listed the space (--knobs/--space). Without a list, a CPU config whose ranks × threads
  /// would oversubscribe the cores runs with threads=default (cores ÷ ranks per rank) instead; a listed
  /// combination is measured as listed. Journals from before read true (nothing folded).
  bool user_space = true;
  NoisePlan noise;  ///< the noise-scale trial's stopping rule (its max_seconds is capped by the budget)
  /// Seconds the noise-scale trial trains before it records (NoisePlan::burn_in_seconds); < 0: automatic —
  /// an eighth of the trial's share of the budget from random weights (a built-in workload, a model file whose export drew them), none from
  /// the user's (--init-from, a --model file with its own weights).
  double noise_burn_in = -1;
  /// > 0: the noise scale is given, not measured (`--noise-scale`: e.g. the value `autotune converge` implied over a
  /// whole training run); no noise-scale trial runs.
  double noise_scale = 0;
  /// How long the user's training runs (tuner/pricing/run_length.h: "500000", "3epochs", "2.5e9tokens"; "" = one pass over the
  /// data): the horizon the noise scale is averaged over to price a changed batch (tuner/pricing/noise_over_run.h). A pricing
  /// fact, not a trial's: a resumed run (or `autotune report`) may be given another.
  std::string run_length;
  /// A noise log from the user's own training loop (tuner/pricing/noise_log.h, written by the loggers in logger/): it prices a
  /// changed batch instead of a noise-scale trial, which then does not run. Kept beside the run as noise-log.jsonl.
  std::string noise_log;
  /// The learning rate measured inside the run (tuner/tune/lr_sweep_phase.h): "your-batch", "changed-batch" (answer (b)'s,
  /// when the run finds one), "both", or "off". Its cost is kept from the budget and said up front.
  std::string lr_sweep = "off";

  /// What follows from the options: the strategy's seed (the setup's), whether it may change the batch (the
  /// time objective), and no busy-host guard for unpinned local slots (their trials share the CPUs by request).
  /// Called after the CLI or the journal filled them.
  void derive();

  /// Calls `v(spec, member...)` for every stored run option, in the CLI's order, with the same member of each of
  /// `options`. The one table of run options (the setup's settings have their own, TrialSetup::visit).
  template <class V, class... O>
  static void visit(V&& v, O&... options);
};

template <class V, class... O>
void TuneOptions::visit(V&& v, O&... o) {
  using Spec = OptionSpec;
  const std::string resumed_run = "its journal fixes the run it continues";
  v(Spec("strategy", "--strategy", "grid | random | coordinate | halving | auto").with_default().fixed_by_journal(resumed_run),
    o.strategy.name...);
  v(Spec("max_trials", "--max-trials", "random: configs to sample (default: a third of the grid, at least 4)")
        .range(1, 100000)
        .fixed_by_journal(resumed_run),
    o.strategy.max_trials...);
  v(Spec("effective_batch", "--effective-batch", "hold ranks × batch_size × grad_accum at N (grad_accum follows the other two)")
        .range(1, 1 << 24)
        .fixed_by_journal(resumed_run),
    o.strategy.effective_batch...);
  v(Spec("batch_values"), o.strategy.batch_values...);
  v(Spec("confirm_top", "--confirm-top", "candidates re-run at the end, interleaved").with_default().range(1, 10).fixed_by_journal(resumed_run),
    o.confirm_top...);
  v(Spec("confirm_rounds", "--confirm-rounds", "fresh runs of each candidate (and the baseline) in the confirmation")
        .with_default()
        .range(1, 10)
        .fixed_by_journal(resumed_run),
    o.confirm_rounds...);
  v(Spec("max_rel_iqr", "--max-noise", "a trial is noisy above this window IQR/median, in % (re-measured, then rejected)")
        .percent()
        .with_default()
        .range(0.1, 100.0)
        .required()
        .fixed_by_journal(resumed_run),
    o.stability.max_rel_iqr...);
  v(Spec("max_drift", "--max-drift", "a trial is still drifting when its last window is this many % off its first")
        .percent()
        .with_default()
        .range(0.1, 100.0)
        .fixed_by_journal(resumed_run),
    o.stability.max_drift...);
  v(Spec("max_host_load", "--max-host-load",
         "a trial was timed on a busy host when other programs used more than this share of its CPUs meanwhile, in % (at "
         "least 0.25 of a core; re-measured, then rejected; 100: off)")
        .percent()
        .with_default()
        .range(1.0, 100.0)
        .fixed_by_journal(resumed_run),
    o.stability.max_host_load...);
  v(Spec("calibrate_noise", "--calibrate-noise",
         "on: raise --max-noise/--max-drift to what this host's own noise produces, measured on the first configs (at most "
         "4×); off: fixed limits")
        .on_off_flag()
        .with_default()
        .stored_before("false")  // journals from before the calibration resume (and report) with the fixed limits they ran with
        .fixed_by_journal(resumed_run),
    o.stability.calibrate...);
  v(Spec("loss_tolerance", "--loss-tolerance",
         "a config that changes numerics (precision) is rejected when its loss, averaged over its last 10 steps, is more than "
         "this many % off its fp32 reference run's")
        .percent()
        .with_default()
        .range(0.1, 100.0)
        .fixed_by_journal(resumed_run),
    o.stability.loss_tolerance...);
  v(Spec("objective", "--objective",
         "time: the fastest config at your global batch (--effective-batch, else the workload's default), and a changed batch "
         "only when its predicted time to the same loss wins (needs --data); throughput: samples/s")
        .one_of({"time", "throughput"})
        .with_default()
        .stored_before("\"throughput\"")  // runs from before the time objective ranked by samples/s
        .fixed_by_journal(resumed_run),
    o.objective...);
  v(Spec("noise_burn_in", "--noise-burn-in",
         "seconds the noise-scale trial trains before it measures (default: 5% of the budget from random weights, "
         "0 from weights you gave: --init-from, or a --model file exported with its own)")
        .range(0.0, 86400.0)
        .fixed_by_journal(resumed_run),
    o.noise_burn_in...);
  v(Spec("noise_scale", "--noise-scale",
         "give the noise scale instead of measuring it (e.g. the value autotune converge implied over a whole run)")
        .range(1e-9, 1e18)
        .fixed_by_journal(resumed_run),
    o.noise_scale...);
  v(Spec("run_length", "--run-length",
         "how long your training runs, in samples, epochs or tokens (500000, 3epochs, 2.5e9tokens): a changed batch is priced "
         "by the noise scale averaged over it (default: one pass over the data)"),
    o.run_length...);
  v(Spec("noise_log", "--noise-log",
         "a noise log from your own training loop (logger/autotune_noise_log.py or .h): it prices a changed batch, and no "
         "noise-scale trial runs (docs/time-to-train.md, \"Your own training loop\")")
        .fixed_by_journal("a resumed run keeps its noise log; autotune report DIR --noise-log FILE prices it with another"),
    o.noise_log...);
  v(Spec("lr_sweep", "--lr-sweep",
         "measure the learning rate inside the run (the time objective): your-batch, changed-batch (answer (b)'s), both or "
         "off; each sweep's time is kept from the budget and said up front (docs/time-to-train.md)")
        .one_of({"off", "your-batch", "changed-batch", "both"})
        .with_default()
        .stored_before("\"off\""),
    o.lr_sweep...);
  v(Spec("memory_model", "--memory-model",
         "with --memory-cap: on = predict each config's peak memory first and skip what cannot fit (docs/memory.md); off = "
         "run everything under the cap")
        .one_of({"on", "off"})
        .with_default()
        .fixed_by_journal(resumed_run),
    o.memory_model...);
  v(Spec("frontend", "--frontend",
         "whose defaults the baseline is: python (a torch script: foreach AdamW on CUDA) or libtorch (a C++ one)")
        .with_default()
        .one_of({"python", "libtorch"})
        .fixed_by_journal(resumed_run),
    o.frontend...);
  v(Spec("parallel", "--parallel",
         "search trials in flight at once, each in its own slot: disjoint CPU sets (sched_setaffinity, threads capped), one "
         "GPU each on a GPU host; the baseline, verification and confirmation run alone (docs/scale-out.md)")
        .fixed_by_journal("its trials ran in the journal's slots"),
    o.exec.parallel...);
  v(Spec("executor", "--executor",
         "where trials run: local (this host), slurm-steps (each trial an srun --exact step of the allocation autotune runs "
         "in), slurm-jobs (each trial an sbatch job); docs/scale-out.md")
        .with_default()
        .fixed_by_journal("its journal names where its trials ran"),
    o.exec.executor...);
  v(Spec("pin", "--pin",
         "local slots: on = each slot its own CPUs (threads capped); off = the slots share the CPUs and may outnumber them "
         "(trials that wait on a GPU or I/O rather than compute)")
        .on_off_flag()
        .with_default()
        .fixed_by_journal(resumed_run),
    o.exec.pin...);
  v(Spec("slurm_cpus", "--trial-cpus", "Slurm: CPUs per trial (default: steps — the allocation's ÷ --parallel; jobs — 1)")
        .fixed_by_journal(resumed_run),
    o.exec.slurm_cpus...);
  v(Spec("slurm_gpus", "--trial-gpus", "Slurm: GPUs per trial (default: 1 when the allocation has one per slot, else 0)")
        .fixed_by_journal(resumed_run),
    o.exec.slurm_gpus...);
  v(Spec("slurm_mem_mb", "--trial-mem", "Slurm: memory per trial in MB (default: steps — the allocation's ÷ --parallel; jobs — 1024)")
        .fixed_by_journal(resumed_run),
    o.exec.slurm_mem_mb...);
  v(Spec("slurm_args", "--slurm-arg", "Slurm: one more srun/sbatch argument, e.g. --slurm-arg=--partition=gpu (repeatable)")
        .fixed_by_journal(resumed_run),
    o.exec.slurm_args...);
  // Set by the run itself (or by TrialFlags' --launcher), stored so that a resumed run and its reports see them.
  v(Spec("launcher"), o.launcher...);
  v(Spec("slot_cpus"), o.exec.slot_cpus...);
  v(Spec("memory_headroom").required(), o.stability.memory_headroom...);
  v(Spec("max_remeasure").required(), o.stability.max_remeasure...);
  // The confirmation's run-to-run allowance and round lead: an older run's report names the winner the run named.
  v(Spec("confirm_run_spread").stored_before("false"), o.stability.confirm_run_spread...);
  v(Spec("confirm_round_lead").stored_before("false"), o.stability.confirm_round_lead...);
  v(Spec("baseline_defaults").stored_before("\"catalog\""), o.baseline_defaults...);
  v(Spec("user_space"), o.user_space...);
}

/// The run's identity as stored in meta.options: the setup's members at the top level (as in
/// plan.json), the space, then every row of TuneOptions::visit. Reading fills what is absent as the table says
/// (a journal from before an option reads what that run did) and refuses a value outside its words.
nlohmann::json options_to_json(const TuneOptions& o);
void options_from_json(const nlohmann::json& j, TuneOptions& o);

/// Checks the setup's --data / --cache against the workload and returns the data kind ("", "images",
/// "tokens"). Throws UsageError (one line) for a missing path, a folder given to a token workload, etc.
std::string data_kind_for(const WorkloadInfo& w, const TrialSetup& setup);

/// The embedded default search space (grid): batch_size {32,64,128,256} × threads {1,2}.
KnobSpace default_space();
/// Every knob with its full domain: the default space of `--strategy auto` and `coordinate`;
/// num_workers also at the powers of two above 4 up to half the host's logical CPUs (`host_cpus`;
/// 0 = this machine's), so a 16-core GPU host finds out whether 8 loader threads beat 4.
KnobSpace full_space(unsigned host_cpus = 0);

/// Parses "90s", "10m", "1h30m", "2h" or plain seconds; throws UsageError naming the allowed forms.
double parse_duration(const std::string& text);

}  // namespace autotune
