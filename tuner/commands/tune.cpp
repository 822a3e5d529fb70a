// autotune tune: the search, with its outputs.
#include <cctype>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <deque>
#include <functional>
#include <type_traits>
#include <utility>

#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>

#include "knobs/error.h"
#include "knobs/model_spec.h"
#include "knobs/numbers.h"
#include "reports/run_facts.h"
#include "tuner/exec/slurm.h"
#include "tuner/exec/trial_runner.h"
#include "tuner/commands/command.h"
#include "tuner/commands/range_check.h"
#include "tuner/options/space_file.h"
#include "tuner/tune/tune.h"

namespace autotune::cli {

namespace {

namespace fs = std::filesystem;

/// `autotune tune`'s arguments: the trial flags, this invocation's own (the space, the budget, the folder), and
/// every run option of the table (tuner/options/tune_options.h), each bound to its member of `opts`.
struct TuneArgs {
  TrialFlags trial;
  TuneOptions opts;
  std::vector<std::string> knobs;
  std::string budget = "10m", out_dir, resume_dir, space_file;
  bool step_summary = false;
  /// The run options' flags as CLI11 filled them, and what turns each flag's text (on|off, a percentage, an enum's
  /// name) into its member once parsed. Deques: CLI11 keeps pointers to what it fills.
  std::deque<std::pair<OptionSpec, CLI::Option*>> given;
  std::vector<std::function<void()>> convert;
  std::deque<std::string> texts;
  std::deque<double> scaled;
};

void add_option_flags(CLI::App* c, TuneArgs& a) {
  TuneOptions::visit(
      [&](const OptionSpec& sp, auto& v) {
        if (sp.flag.empty()) return;
        using T = std::decay_t<decltype(v)>;
        CLI::Option* o = nullptr;
        if constexpr (std::is_same_v<T, bool>) {  // on|off
          std::string& text = a.texts.emplace_back(v ? "on" : "off");
          o = c->add_option(sp.flag, text, sp.help)->check(CLI::IsMember({"on", "off"}));
          a.convert.push_back([&v, &text] { v = text == "on"; });
        } else if constexpr (std::is_enum_v<T>) {
          std::string& text = a.texts.emplace_back(to_string(v));
          o = c->add_option(sp.flag, text, sp.help);
          if (!sp.choices.empty()) o->check(CLI::IsMember(sp.choices));
          a.convert.push_back([&v, &text] { from_string(text, v); });
        } else if constexpr (std::is_floating_point_v<T>) {
          if (sp.flag_scale != 1) {
            double& x = a.scaled.emplace_back(v * sp.flag_scale);
            o = c->add_option(sp.flag, x, sp.help);
            a.convert.push_back([&v, &x, k = sp.flag_scale] { v = x / k; });
          } else {
            o = c->add_option(sp.flag, v, sp.help);
          }
          if (sp.allowed.bounded()) o->check(within(sp.allowed.lo, sp.allowed.hi));
        } else {
          o = c->add_option(sp.flag, v, sp.help);
          if constexpr (std::is_arithmetic_v<T>)
            if (sp.allowed.bounded()) o->check(within(sp.allowed.lo, sp.allowed.hi));
          if constexpr (std::is_same_v<T, std::string>)
            if (!sp.choices.empty()) o->check(CLI::IsMember(sp.choices));
        }
        if (sp.show_default) o->capture_default_str();
        a.given.emplace_back(sp, o);
      },
      a.opts);
}

void add_flags(CLI::App* c, TuneArgs& a) {
  a.trial.add_to(c, TrialFlags::Set::tune);
  c->add_option("--knobs", a.knobs, "search space, e.g. --knobs batch_size=32,64 threads=1,2 (default: the embedded space)");
  c->add_option("--budget", a.budget, "time budget: seconds or 90s, 10m, 1h30m")->capture_default_str();
  c->add_option("--out", a.out_dir, "output folder (default runs/<UTC timestamp>)");
  c->add_option("--resume", a.resume_dir, "continue the run in this folder (its journal fixes workload and space)");
  c->add_option("--space", a.space_file, "search space from a YAML/JSON file (knobs:, optionally workload:, strategy:)");
  add_option_flags(c, a);
  c->add_flag("--summary", a.step_summary, "also append report.md to $GITHUB_STEP_SUMMARY (GitHub Actions job summary)");
}

/// Whether the run option named `key` was given on the command line.
bool given(const TuneArgs& a, const std::string& key) {
  for (const auto& [spec, option] : a.given)
    if (spec.key == key) return option->count() > 0;
  return false;
}

/// Inside a Slurm job with a time limit, the budget ends before it: the reports and the trial in flight at the end
/// keep a tenth of the time left (at least 30 s). Said on stderr when it shortens the budget.
void fit_budget_to_slurm_job(TuneOptions& t) {
  const double left = slurm_seconds_left();
  if (left < 0) return;
  const double keep = std::max(30.0, 0.1 * left), fits = std::max(1.0, left - keep);
  if (t.budget_seconds <= fits) return;
  std::cerr << fmt::format("autotune tune: Slurm job {} ends in {:.0f} s: the budget is {:.0f} s ({:.0f} s asked; {:.0f} s kept "
                           "for the last trial and the reports)\n",
                           std::getenv("SLURM_JOB_ID"), left, fits, t.budget_seconds, keep);
  t.budget_seconds = fits;
}

/// The run's options from the flags (and --space FILE); usage errors before anything starts.
TuneOptions options(TuneArgs& a) {
  for (const auto& f : a.convert) f();
  TuneOptions t = a.opts;
  t.setup = a.trial.resolved_setup();
  t.setup.defaults_of = "";  // the tune's baseline sets PyTorch's defaults itself, knob by knob (tuner/options/run_context.cpp)
  t.trial_timeout_seconds = a.trial.trial_timeout;
  t.launcher = a.trial.launcher;
  RunnerOptions("", "").launcher(t.launcher);  // a bad template is a usage error before anything runs
  t.worker = a.trial.worker_path();
  t.budget_seconds = parse_duration(a.budget);
  fit_budget_to_slurm_job(t);
  if (!a.space_file.empty()) {
    if (!a.knobs.empty()) throw UsageError("give the search space once: --knobs or --space FILE, not both");
    const SpaceFile f = read_space_file(a.space_file);
    t.space = f.space;
    if (f.workload && a.trial.setup.workload == TrialSetup{}.workload) t.setup.workload = *f.workload;  // --workload wins
    if (f.strategy && !given(a, "strategy")) t.strategy.name = *f.strategy;
  }
  for (const auto& k : a.knobs) t.space.add_assignment(k);
  t.derive();
  // A bad slot count or executor is refused by run_tune before the run folder exists (tune.cpp, prepared).
  if (!a.resume_dir.empty())
    for (const auto& [spec, option] : a.given)
      if (option->count() > 0 && !spec.fixed_on_resume.empty())
        throw UsageError(fmt::format("{} cannot change a resumed run: {}", spec.flag, spec.fixed_on_resume));
  if (!t.noise_log.empty() && t.noise_scale > 0)
    throw UsageError("give the noise scale once: --noise-scale N or --noise-log FILE, not both");
  if (!t.noise_log.empty() && t.objective != ObjectiveKind::time)
    throw UsageError("--noise-log prices a changed batch by time to train; it needs --objective time (the default)");
  make_strategy(t.strategy, KnobSpace(), Config(), {});  // unknown strategy: usage error up front
  if (t.strategy.effective_batch > 0)
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
  if (!s.by_time) return out;
  if (s.answer_a >= 0)
    out.push_back(fmt::format("(a) at your batch — global batch {}: {}, {:.2f}× the baseline's samples/s (95% CI {:.2f}–{:.2f}×), "
                              "the same training maths",
                              s.user_batch, s.configs[s.answer_a].config.diff_key(s.configs[s.baseline].config),
                              s.answer_a_speedup, s.answer_a_lo, s.answer_a_hi));
  const TimeAnswer& b = s.answer_b;
  std::string lr_words;  // the learning rate to start from, by the user's optimizer's family (reports/run_facts.h)
  if (b.lr.given) {
    const FamilyLr f = family_lr(s, b.lr);
    lr_words = f.lr > 0 ? fmt::format("; start from lr {:.3g} ({})", f.lr, f.rule) : "; " + f.rule;
  }
  if (b.config >= 0 && b.time_ratio > 0)
    out.push_back(fmt::format("(b) if you change the batch — global batch {}: {}, predicted {:.2f}× (a)'s speed to the same loss, "
                              "{:.2f}–{:.2f}× for B̄ from {} to {} (its 95% interval, widened to at least half to twice it){}",
                              b.global_batch, s.configs[b.config].config.diff_key(s.configs[s.baseline].config), b.time_ratio,
                              b.time_ratio_min, b.time_ratio_max, with_commas(b.band_lo), with_commas(b.band_hi),
                              lr_words));
  else if (b.config >= 0)
    out.push_back(fmt::format("(b) if you change the batch — global batch {}: {} runs {:.2f}× (a)'s samples/s, but its time to "
                              "train is not predicted: {}",
                              b.global_batch, s.configs[b.config].config.diff_key(s.configs[s.baseline].config),
                              b.throughput_ratio, s.time_note.empty() ? "no usable noise scale" : s.time_note));
  const NoiseScaleSummary& n = s.noise_scale;
  if (n.measured && n.over_run)
    out.push_back(fmt::format("gradient noise scale over your run ({}): B̄ = {} samples, 95% interval {}–{}; along {} B_simple grew as "
                              "samples^{:.2f} (95% {:.2f} to {:.2f}) over {} windows, {} as a whole {}",
                              n.run_basis, with_commas(n.value), with_commas(n.lo), with_commas(n.hi),
                              n.log.empty() ? "the trial" : "your loop's noise log", n.growth.exponent, n.growth.lo, n.growth.hi,
                              n.windows.size(), n.log.empty() ? "the trial" : "the log", with_commas(n.trial_value)));
  else if (s.noise_scale.measured)
    out.push_back(fmt::format("gradient noise scale: B_simple = {} samples, 95% interval {}–{} — {}", with_commas(s.noise_scale.value),
                              with_commas(s.noise_scale.lo), s.noise_scale.bounded() ? with_commas(s.noise_scale.hi) : "∞",
                              s.noise_scale.early ? "measured in early training from random weights: it grows as the loss falls" : "measured from your weights"));
  return out;
}

int run(TuneArgs& a, std::ostream& o) {
  const TuneOptions t = options(a);
  const std::string what = !task_of(t.setup.model).empty() ? "task " + task_of(t.setup.model)
                           : !t.setup.model.empty()           ? "model " + t.setup.model
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
  if (const std::string b = busy_host_line(r.summary); !b.empty()) o << "busy host: " << b << "\n";
  if (r.summary.winner >= 0) {
    // The report's first screen in its own words (reports/run_facts.h): the same figures, intervals and caveats.
    const Headline h = headline(r.summary, [](const std::string& x) { return x; });
    o << "winner: " << h.winner << "\n";
    o << "speedup over the baseline: " << h.speedup << "\n";
    for (const auto& ch : winner_changes(r.summary)) o << "  " << ch.what << ": " << ch.effect << "\n";
    if (!r.summary.effects_together.line.empty()) o << r.summary.effects_together.line << "\n";
    for (const auto& line : answer_lines(r.summary)) o << line << "\n";
    if (const CompileFacts c = compile_facts(r.summary, r.summary.winner); c.present) o << "compile: " << c.sentence << "\n";
    if (!r.summary.winner_note.empty()) o << "why this pick: " << r.summary.winner_note << "\n";  // the report's words
  } else {
    std::string label = no_winner_label(r.summary);
    label[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(label[0])));
    o << label << ": " << no_stable_config_line(r.summary) << " (each config's reason: the report)\n";
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
