#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <iostream>
#include <ostream>
#include <type_traits>

#include "knobs/memory.h"
#include "knobs/model_spec.h"
#include "knobs/error.h"
#include "tuner/commands/command.h"
#include "tuner/commands/range_check.h"
#include "tuner/exec/trial_runner.h"
#include "tuner/options/tune_options.h"
#include "tuner/exec/worker_client.h"

namespace autotune::cli {

namespace fs = std::filesystem;

std::string absolute(const std::string& p) { return p.empty() ? p : fs::absolute(p).lexically_normal().string(); }

void TrialFlags::refuse_setup_beside(const std::string& source, const std::set<std::string>& allowed) const {
  if (!app_) return;
  std::vector<std::string> flags = {"--task"};
  TrialSetup defaults;
  TrialSetup::visit(
      [&](const SettingSpec& sp, auto&) {
        if (!sp.flag.empty()) flags.push_back(sp.flag.substr(0, sp.flag.find(',')));
      },
      defaults);
  for (const auto& f : flags)
    if (!allowed.count(f) && app_->get_option_no_throw(f) && app_->count(f) > 0)
      throw UsageError(
          fmt::format("{} does not combine with {}: the folder's own setup (its workload or model, data, device "
                      "and seed) is the one trained{}",
                      f, source, allowed.empty() ? "" : fmt::format("; allowed beside it: {}", fmt::join(allowed, ", "))));
}

void TrialFlags::add_to(CLI::App* app, Set which) {
  app_ = app;
  static const std::set<std::string> names_the_model = {"workload",     "device",       "model",      "model_spec",  "model_input",
                                                         "model_target", "model_loss",   "model_kwargs", "model_task", "model_seq",
                                                         "model_output", "trainer",      "plugin"};
  TrialSetup::visit(
      [&](const SettingSpec& sp, auto& v) {
        if (sp.flag.empty() || (which == Set::model && !names_the_model.count(sp.key))) return;
        using T = std::decay_t<decltype(v)>;
        CLI::Option* o = app->add_option(sp.flag, v, sp.help);
        if constexpr (std::is_arithmetic_v<T>) {
          // A 0 outside the allowed range means "the workload's default": not shown as a default.
          if (v != 0 || sp.allowed.contains(0)) o->capture_default_str();
          if (sp.allowed.bounded()) o->check(within(sp.allowed.lo, sp.allowed.hi));
        } else {
          if (!sp.path && !v.empty()) o->capture_default_str();
          if (!sp.choices.empty()) o->check(CLI::IsMember(sp.choices));
          if (sp.size)
            o->check(CLI::Validator(
                [](std::string& text) -> std::string {
                  try {
                    parse_size(text, "");
                  } catch (const UsageError& e) {
                    return e.what();
                  }
                  return "";
                },
                "SIZE"));
        }
      },
      setup);
  // A task file (pyworker/autotune_pyworker/task.py: the user's model, dataset, collate, loss and optimizer): the
  // model reference task:FILE, which the Python worker trains.
  CLI::Option* task = app->add_option_function<std::string>(
      "--task",
      [this](const std::string& file) { setup.model = "task:" + file; },
      "your training as a task file (train.py, or a module): model() and optionally dataset(), collate(samples), "
      "sampler(dataset), loss(model, batch), optimizer(params) and batch_size, trained by the Python worker "
      "(docs/models.md, \"Your training as a task file\")");
  task->check(CLI::Validator(
      [](std::string& text) -> std::string {
        std::error_code ec;
        if (text.size() > 3 && text.compare(text.size() - 3, 3, ".py") == 0 && !fs::is_regular_file(text, ec))
          return fmt::format("--task {}: no such file", text);
        return "";
      },
      "FILE"));
  if (CLI::Option* model = app->get_option_no_throw("--model")) task->excludes(model);
  if (which != Set::model) {  // how a trial is measured: nothing a snippet (apply) shows
    app->add_option("--trial-timeout", trial_timeout, "seconds before a trial is stopped")
        ->capture_default_str()
        ->check(within(1.0, 86400.0));
    app->add_option("--launcher", launcher,
                    "how trials with ranks > 1 start their processes: local (one worker per rank on this host), torchrun, "
                    "or a command template with {cmd} and {ranks}, e.g. \"srun --ntasks={ranks} {cmd}\"")
        ->capture_default_str();
  }
  app->add_option("--worker", worker, "autotune-worker binary (default: next to autotune, or $AUTOTUNE_WORKER)");
  if (which == Set::trial)
    app->add_option("--frontend", frontend,
                    "whose defaults a knob not given with --set takes: PyTorch 2.11's for a plain Python script or for a "
                    "LibTorch program (zero_grad none; AdamW foreach on CUDA from Python), as in a tune's baseline")
        ->capture_default_str()
        ->check(CLI::IsMember({"python", "libtorch"}));
}

TrialSetup TrialFlags::resolved_setup() const {
  TrialSetup s = setup;
  TrialSetup::visit(
      [](const SettingSpec& sp, auto& v) {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>)
          if (sp.path) v = sp.key == "model" ? absolute_model(v) : absolute(v);
      },
      s);
  s.defaults_of = frontend;
  // Installed without the C++ worker (`pip install` builds it only when asked: docs/install.md), a built-in workload
  // runs as its Python twin in the Python worker; the report says that Python trained it. A TorchScript model or a
  // plugin still needs the C++ worker, and its absence is said when it is called.
  if (s.trainer.empty() && worker.empty() && s.model.empty() && s.plugin.empty() && !cpp_worker_installed())
    s.trainer = "python";
  return s;
}

TrialPlan TrialFlags::plan(const std::vector<std::string>& set_args) const {
  TrialPlan p;
  p.setup = resolved_setup();
  for (const auto& s : set_args) p.config.set_assignment(s);
  return p;
}

WorkloadInfo TrialFlags::check(const TrialSetup& s) const {
  WorkloadInfo w = describe_workload(worker_path(), s);
  data_kind_for(w, s);
  return w;
}

bool TrialFlags::run_checks(const TrialSetup& s) const {
  return worker.empty() && trainer_of(s) == "python" && s.data.empty() && s.data_cache.empty();
}

TrialRecord TrialFlags::run_checked(const TrialPlan& plan, const std::string& keep_dir) const {
  if (!run_checks(plan.setup)) {
    check(plan.setup);
    return run(plan, keep_dir);
  }
  TrialRecord rec = run(plan, keep_dir);
  if (const std::string why = worker_refusal(rec.stderr_tail); rec.result.status == TrialStatus::error &&
                                                                rec.outcome == "exit 2" && !why.empty()) {
    if (const char* v = std::getenv("AUTOTUNE_VERBOSE"); v && std::string(v) == "1") std::cerr << rec.stderr_tail;
    throw UsageError(why);
  }
  return rec;
}

TrialRecord TrialFlags::run(const TrialPlan& plan, const std::string& keep_dir) const {
  const bool temp = keep_dir.empty();
  const fs::path dir = temp ? fs::temp_directory_path() / fmt::format("autotune-trial-{}", ::getpid()) : fs::path(keep_dir);
  TrialRunner runner(RunnerOptions(worker_path(), dir.string()).timeout_seconds(trial_timeout).launcher(launcher));
  TrialRecord rec = runner.run(plan, TrialKind::search, 1);
  if (temp) fs::remove_all(dir);
  return rec;
}

std::string TrialFlags::worker_path() const { return worker.empty() ? default_worker_path(resolved_setup()) : worker; }

void print_outputs(const std::vector<std::string>& paths, std::ostream& o) {
  std::size_t width = 16;  // "journal.sqlite: " — and wider for longer names, so the paths line up
  for (const auto& p : paths) width = std::max(width, fs::path(p).filename().string().size() + 2);
  for (const auto& p : paths) o << fmt::format("{:<{}}{}\n", fs::path(p).filename().string() + ":", width, p);
}

}  // namespace autotune::cli
