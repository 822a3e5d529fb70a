// autotune check: the CI performance-regression gate (tuner/check/check.h decides; reports/check_reports.h writes).
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>

#include "knobs/error.h"
#include "reports/check_reports.h"
#include "tuner/exec/trial_runner.h"
#include "tuner/check/check.h"
#include "tuner/commands/command.h"
#include "tuner/commands/range_check.h"

namespace autotune::cli {

namespace {

namespace fs = std::filesystem;

struct CheckArgs {
  TrialFlags trial;
  std::vector<std::string> set;
  CheckSideSpec a, b;
  int reps = 10, min_reps = 5;
  std::optional<double> max_host_load;  ///< in %, as given
  std::uint64_t order_seed = 0;
  double alpha = 0.01;
  std::string floor = "3%", memory_floor = "5%", inconclusive = "fail", out_dir;
  bool step_summary = false;
};

/// "3%" or "0.03" → 0.03; anything else is a usage error naming the flag.
double fraction(const std::string& flag, const std::string& text) {
  try {
    std::size_t used = 0;
    const bool percent = !text.empty() && text.back() == '%';
    const double v = std::stod(percent ? text.substr(0, text.size() - 1) : text, &used);
    if (used == (percent ? text.size() - 1 : text.size()) && v >= 0 && (percent ? v / 100 : v) < 1) return percent ? v / 100 : v;
  } catch (const std::exception&) {
  }
  throw UsageError(
      fmt::format("{} '{}' is not a share; allowed: a percentage like 3% or a fraction like 0.03 (below 100%)", flag, text));
}

void add_side_flags(CLI::App* c, const std::string& side, CheckSideSpec& s, bool baseline) {
  c->add_option("--" + side + "-run", s.run, "this side is the winner of a tune output folder (or its best.json)");
  c->add_option("--" + side + "-set", s.set, "knob=value for this side only (repeatable)");
  c->add_option("--" + side + "-worker", s.worker, "this side's autotune-worker binary (e.g. a build of the pull request)");
  c->add_option("--" + side + "-model", s.model,
                "this side trains this TorchScript model (e.g. the model file of the pull request)");
  c->add_option("--" + side + "-trainer", s.trainer,
                "this side's worker: cpp (LibTorch) or python (PyTorch's Python API) — the same model and knobs in both "
                "frontends, side by side")
      ->check(CLI::IsMember({"cpp", "python"}));
  if (baseline)
    c->add_option("--baseline-stored", s.stored,
                  "an earlier check.json: its candidate side is the baseline, not re-run (only if machine and config match)");
}

void add_flags(CLI::App* c, CheckArgs& a) {
  a.trial.add_to(c);
  c->add_option("--set", a.set, "knob=value for both sides (repeatable)");
  add_side_flags(c, "baseline", a.a, true);
  add_side_flags(c, "candidate", a.b, false);
  c->add_option("--reps", a.reps, "fresh worker processes per side, interleaved")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  c->add_option("--order-seed", a.order_seed, "seeds the A/B order of each round (recorded)")->capture_default_str();
  c->add_option("--alpha", a.alpha, "significance of the one-sided test, after Holm's correction")
      ->capture_default_str()
      ->check(CLI::Range(1e-6, 0.5));
  c->add_option("--floor", a.floor, "throughput: a regression also needs B this much slower")->capture_default_str();
  c->add_option("--memory-floor", a.memory_floor, "peak memory: a regression also needs B to use this much more")
      ->capture_default_str();
  c->add_option("--min-reps", a.min_reps, "fewer usable repetitions per side: inconclusive")
      ->capture_default_str()
      ->check(CLI::Range(2, 1000));
  c->add_option("--inconclusive", a.inconclusive, "exit status when the check cannot decide: fail (4) or pass (0)")
      ->capture_default_str()
      ->check(CLI::IsMember({"pass", "fail"}));
  c->add_option("--max-host-load", a.max_host_load,
                "a repetition was timed on a busy host when other programs used more than this share of its CPUs "
                "meanwhile, in % (at least 0.25 of a core; sides that saw different contention: inconclusive; 100: off; "
                "default 10, or $AUTOTUNE_MAX_HOST_LOAD)")
      ->check(within(1, 100));
  c->add_option("--out", a.out_dir, "output folder (default checks/<UTC timestamp>; must not hold anything)");
  c->add_flag("--summary", a.step_summary, "also append check.md to $GITHUB_STEP_SUMMARY");
}

CheckOptions options(const CheckArgs& a) {
  CheckOptions o;
  o.setup = a.trial.resolved_setup();
  o.set = a.set;
  o.worker = a.trial.worker;  // "" → each side's default for its trainer (default_worker_path)
  o.trial_timeout_seconds = a.trial.trial_timeout;
  o.launcher = a.trial.launcher;
  RunnerOptions("", "").launcher(o.launcher);  // a bad template is a usage error before anything runs
  o.a = a.a;
  o.b = a.b;
  for (CheckSideSpec* s : {&o.a, &o.b}) {
    s->run = absolute(s->run);
    s->stored = absolute(s->stored);
    s->model = absolute(s->model);
    if (s->worker.find('/') != std::string::npos) s->worker = absolute(s->worker);
  }
  if (!o.a.stored.empty() && !o.a.run.empty())
    throw UsageError("give the baseline once: --baseline-run or --baseline-stored, not both");
  o.reps = a.reps;
  o.order_seed = a.order_seed;
  o.gate.alpha = a.alpha;
  o.gate.floor = fraction("--floor", a.floor);
  o.gate.memory_floor = fraction("--memory-floor", a.memory_floor);
  o.gate.min_reps = a.min_reps;
  if (a.max_host_load) o.max_host_load = *a.max_host_load / 100;
  o.out_dir = a.out_dir;
  return o;
}

int run(const CheckArgs& a, std::ostream& o) {
  const CheckOptions opts = options(a);
  o << fmt::format("autotune check: {} repetitions per side, interleaved (order seed {})\n", opts.reps, opts.order_seed)
    << std::flush;
  const CheckSummary s = run_check(opts, o);
  const std::vector<std::string> paths = write_check_reports(s, s.out_dir);  // every output before the exit status
  o << fmt::format("\ncheck: {} — {}\n", s.verdict, s.reason);
  for (const auto& m : s.metrics) o << fmt::format("  {:<12} {:<12} {}\n", m.name, m.verdict, m.reason);
  if (const char* gha = std::getenv("GITHUB_ACTIONS"); gha && std::string(gha) == "true")
    for (const auto& line : github_annotations(s)) o << line << "\n";
  print_outputs(paths, o);
  if (a.step_summary) append_step_summary(render_check_markdown(s, kStepSummaryLimit), o);
  return check_exit_status(s, a.inconclusive == "pass");
}

}  // namespace

Command check_command() {
  auto a = std::make_shared<CheckArgs>();
  return {
      "check",
      "CI gate: measure a baseline and a candidate interleaved in fresh processes; exit 0 pass, 1 regression, 2 usage, 3 a side "
      "failed, 4 inconclusive",
      [a](CLI::App* c) { add_flags(c, *a); }, [a](std::ostream& o) { return run(*a, o); }};
}

}  // namespace autotune::cli
