#pragma once
// The `autotune` subcommands: each is a name, a help line, the flags it adds and the function that
// runs it (tuner/cli.cpp holds the table and turns errors into exit statuses).
#include <CLI/CLI.hpp>

#include <functional>
#include <set>
#include <iosfwd>
#include <string>
#include <vector>

#include "knobs/protocol.h"
#include "knobs/record.h"
#include "reports/summary.h"

namespace autotune::cli {

struct Command {
  std::string name, help;
  std::function<void(CLI::App*)> setup;   ///< adds the command's flags
  std::function<int(std::ostream&)> run;  ///< runs it; returns the exit status (throws UsageError for bad input)
};

Command tune_command();
Command check_command();
Command trial_command();
Command apply_command();
Command profile_command();
Command report_command();
Command converge_command();
Command lr_sweep_command();
Command memory_command();
Command prepare_data_command();
Command knobs_command();
Command workloads_command();

/// `autotune --version`: the version, and the Python, torch and CUDA each installed worker runs with. Exit 1 when
/// neither worker can run.
int version(std::ostream& out);

/// The flags of every command that runs trials: one per setting of the trial setup (knobs/setup.h's
/// table: name, help, range, choices), plus where the worker is and how long a trial may take.
struct TrialFlags {
  TrialSetup setup;
  std::string worker;  ///< "" → next to autotune, or $AUTOTUNE_WORKER
  double trial_timeout = 600;
  std::string launcher = "local";  ///< how trials with ranks > 1 start (RunnerOptions::launcher)
  std::string frontend = "python";  ///< whose PyTorch defaults an unset knob takes (TrialSetup::defaults_of)

  /// Which flags a command takes: all of a trial's; a tune's (its run options have their own --frontend); or only
  /// what names the model and the machine (apply: nothing of how a trial is measured changes a snippet).
  enum class Set { trial, tune, model };
  void add_to(CLI::App* app, Set which = Set::trial);
  /// The setup as given, with file and folder paths made absolute (the worker runs in its trial folder).
  TrialSetup resolved_setup() const;
  /// One trial of `set_args` (knob=value) with these flags.
  TrialPlan plan(const std::vector<std::string>& set_args) const;
  /// Usage errors before anything runs: an unknown workload, a --data it cannot read. Returns what the worker's
  /// `describe` said of the workload.
  WorkloadInfo check(const TrialSetup& setup) const;
  /// Whether one trial of `setup` may skip check(): the default Python worker without --data or --cache, whose run
  /// builds and probes the model exactly as its `describe` would and refuses the same input in the same words
  /// (run_checked turns that refusal into the usage error). Saves a Python process (torch's import) per trial.
  bool run_checks(const TrialSetup& setup) const;
  /// Runs `plan` in one fresh worker process. Its plan.json, result.json and logs stay in `keep_dir`,
  /// or go with a temporary folder when `keep_dir` is "".
  TrialRecord run(const TrialPlan& plan, const std::string& keep_dir = "") const;
  /// check() then run(), or — where run_checks() — run() alone, a worker's refusal of its input (exit 2 with
  /// "autotune-worker: error: …") thrown as the UsageError check() would have thrown.
  TrialRecord run_checked(const TrialPlan& plan, const std::string& keep_dir = "") const;
  std::string worker_path() const;
  /// Beside a folder that brings its own setup (`source`: --from-run, --from-sweep), a setup flag would be replaced by
  /// the folder's without a word: any given but those in `allowed` (e.g. --lr) is refused in one line.
  void refuse_setup_beside(const std::string& source, const std::set<std::string>& allowed) const;

 private:
  const CLI::App* app_ = nullptr;  ///< the command add_to filled: which flags were given
};

/// --summary: appends `markdown` to $GITHUB_STEP_SUMMARY (GitHub Actions' job summary) and says so on `o`; says
/// so too, and writes nothing, outside a GitHub Actions step. Render it within kStepSummaryLimit bytes (GitHub's
/// limit is 1 MiB).
void append_step_summary(const std::string& markdown, std::ostream& o);
constexpr std::size_t kStepSummaryLimit = 1000 * 1000;
/// report.md of `s`, appended as above.
void write_step_summary(const RunSummary& s, std::ostream& o);
/// "best.json:      PATH", one line per file written.
void print_outputs(const std::vector<std::string>& paths, std::ostream& o);
/// An absolute, normalised path ("" stays "").
std::string absolute(const std::string& path);

}  // namespace autotune::cli
