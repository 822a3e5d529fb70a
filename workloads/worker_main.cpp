// autotune-worker: runs one trial per process. The tuner launches it; users rarely call it directly.
//
//   autotune-worker run --plan plan.json --result result.json
//   autotune-worker info [--json]
//   autotune-worker workloads [--json]
//   autotune-worker describe --setup setup.json [--parameters]   the workload a trial setup names (a --model is loaded
//                                                               and probed; --parameters: its trainable parameters counted)
//   autotune-worker serve --socket PATH --parent PID             the warm worker: forks one child per command it is sent
//                                                               (workloads/warm_server.h; the tuner starts it)
//
// Exit status: 0 when a result was written (whatever the trial's status), 2 for a bad plan or usage.
//
// Data-parallel (WORLD_SIZE > 1 in the environment, as autotune's local launcher, torchrun and srun
// set it): every rank runs the same command. Rank 0 writes --result with all ranks' figures; rank R > 0
// writes RESULT.rankR only. Each rank keeps "step N phase" in RESULT.rankR.progress. A rank whose
// trial failed exits 3 after writing its result, so the launcher stops the other ranks at once.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "knobs/error.h"
#include "knobs/protocol.h"
#include "workloads/engine/dist/process_group.h"
#include "workloads/engine/environment.h"
#include "workloads/engine/trainer.h"
#include "workloads/engine/weights_file.h"
#include "workloads/input/pipeline.h"
#include "workloads/registry.h"
#include "workloads/warm_server.h"
#include "workloads/workload.h"

using namespace autotune;

namespace {

/// The setup's model built on the CPU, without its data: what `describe` checks and counts before any trial runs.
std::unique_ptr<Workload> built_on_cpu(TrialSetup setup) {
  setup.data.clear();
  setup.data_cache.clear();
  auto w = make_workload(setup);
  Settings s;
  s.batch_size = std::max<std::int64_t>(1, w->info().default_batch_size);
  w->build(BuildOptions{setup, s, torch::kCPU});
  return w;
}

/// --init-from is loaded into the model before any trial runs, so weights that do not fit stop a tune
/// with one line instead of failing every trial.
void check_weights(Workload& w, const std::string& init_from) {
  auto state = w.named_state();
  load_weights(state, init_from);
}

/// The model's trainable parameters: what a noise log from the user's own loop must match (tuner/pricing/noise_log.h).
void count_trainable(Workload& w, WorkloadInfo& info) {
  for (const auto& p : w.parameters())
    if (p.requires_grad()) {
      info.parameters += p.numel();
      ++info.parameter_tensors;
    }
}

}  // namespace

/// One command of the worker (run, info, workloads, describe), in a fresh process or in a child of the warm worker.
int worker_cli(int argc, char** argv) {
  // A rank whose peer died writes into a closed connection (Gloo's TCP pairs): with SIGPIPE ignored that is an error the
  // rank reports in its result ("then rank 0: …"), as a Python rank does (CPython ignores it too), not a second death
  // that srun may report before the first one's and the tuner then blames.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app{"autotune-worker: runs one autotune trial in this process (launched by `autotune`)"};
  app.require_subcommand(1);
  std::string plan_path, result_path;
  bool json_out = false;
  auto* run = app.add_subcommand("run", "run the trial described by a plan.json and write result.json");
  run->add_option("--plan", plan_path, "plan.json (schema autotune.plan/1)")->required()->check(CLI::ExistingFile);
  run->add_option("--result", result_path, "where to write result.json (schema autotune.result/1)")->required();
  auto* info = app.add_subcommand("info", "torch/CUDA versions this was built with and devices available now");
  info->add_flag("--json", json_out, "print JSON");
  auto* wl = app.add_subcommand("workloads", "list the built-in workloads (or a plugin's)");
  wl->add_flag("--json", json_out, "print JSON");
  std::string plugin;
  wl->add_option("--plugin", plugin, "list the workloads this plugin registers");
  std::string setup_path;
  auto* describe =
      app.add_subcommand("describe", "print (JSON) the workload a trial setup names; a --model is loaded and probed");
  describe->add_option("--setup", setup_path, "a trial setup (plan.json's settings)")->required()->check(CLI::ExistingFile);
  bool count_parameters = false;
  describe->add_flag("--parameters", count_parameters,
                     "also build the model (on the CPU) and count its trainable parameters: what a noise log's must match");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, exit 2 (a usage error, as the worker's other refusals): CLI11's own text spans lines
    // and exits with its internal error numbers (106 for a missing subcommand).
    std::string what = e.what();
    for (char& c : what)
      if (c == '\n') c = ' ';
    if (what == "A subcommand is required")
      what = argc > 1 && argv[1][0] != '-' ? fmt::format("unknown command '{}'", argv[1]) : "a command is required";
    std::cerr << "autotune-worker: " << what << "; commands: run, info, workloads, describe (--help)\n";
    return 2;
  }

  try {
    if (*info) {
      const auto env = environment_fingerprint();
      if (json_out) std::cout << nlohmann::json(env).dump(2) << "\n";
      else std::cout << describe_environment(env);
      return 0;
    }
    if (*wl) {
      const auto infos = workload_infos(plugin);
      if (json_out) {
        std::cout << nlohmann::json(infos).dump(2) << "\n";
      } else {
        for (const auto& w : infos) std::cout << fmt::format("{:<10} {}\n", w.name, w.description);
      }
      return 0;
    }
    if (*describe) {
      const TrialSetup setup = nlohmann::json::parse(read_file(setup_path)).get<TrialSetup>();
      WorkloadInfo info = make_workload(setup)->info();
      check_data(setup, info);
      if (!setup.init_from.empty() || count_parameters) {  // one build serves both
        const auto w = built_on_cpu(setup);
        if (!setup.init_from.empty()) check_weights(*w, setup.init_from);
        if (count_parameters) count_trainable(*w, info);
      }
      if (!setup.plugin.empty() && info.source.empty()) info.source = "plugin " + setup.plugin;
      std::cout << nlohmann::json(info).dump(2) << "\n";
      return 0;
    }
    const TrialPlan plan = read_plan(plan_path);
    const dist::DistEnv denv = dist::DistEnv::from_environment();
    if (!denv.distributed()) {
      TrialResult result = run_trial(plan);
      result.started = started_forked() ? "forked" : "fresh";
      write_result(result, result_path);
      return 0;
    }
    const std::string mine = denv.rank == 0 ? result_path : fmt::format("{}.rank{}", result_path, denv.rank);
    const TrialResult result = run_trial(plan, fmt::format("{}.rank{}.progress", result_path, denv.rank));
    write_result(result, mine);
    if (result.status != TrialStatus::ok) {
      std::cerr << fmt::format("autotune-worker: rank {} of {}: {}: {}\n", denv.rank, denv.world, to_string(result.status),
                               result.message);
      return 3;
    }
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "autotune-worker: error: " << e.what() << "\n";
    return 2;
  } catch (const DiskFull& e) {  // the tuner stops the run instead of recording a failed trial
    std::cerr << "autotune-worker: " << e.what() << "\n";
    return kExitDiskFull;
  } catch (const std::exception& e) {
    std::cerr << "autotune-worker: error: " << e.what() << "\n";
    return 2;
  }
}

/// `serve` is the warm worker's server (workloads/warm_server.h); every other command runs here.
int main(int argc, char** argv) {
  if (argc == 6 && std::string(argv[1]) == "serve" && std::string(argv[2]) == "--socket" &&
      std::string(argv[4]) == "--parent") {
    char exe[4096] = {};
    const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    return serve(argv[3], static_cast<pid_t>(std::atoi(argv[5])), n > 0 ? std::string(exe, n) : argv[0], worker_cli);
  }
  return worker_cli(argc, argv);
}
