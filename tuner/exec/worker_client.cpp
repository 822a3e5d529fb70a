#include "tuner/exec/worker_client.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "knobs/did_you_mean.h"
#include "knobs/error.h"
#include "knobs/model_spec.h"
#include "tuner/exec/subprocess.h"
#include "tuner/exec/trial_runner.h"
#include "tuner/exec/warm_worker.h"

namespace autotune {

namespace fs = std::filesystem;

namespace {

/// Runs `worker SUB ARGS…` and parses what it prints. Exit 2 is the worker refusing its input (a bad
/// model or spec): a UsageError with the worker's own one-line reason.
nlohmann::json call_worker(const std::string& worker, const std::string& sub, std::vector<std::string> args = {"--json"}) {
  if (!fs::exists(worker))
    throw std::runtime_error(fmt::format("worker '{}' not found; build it (make build; after a `pip install`, "
                                         "AUTOTUNE_PIP_WORKER=1 pip install --no-build-isolation . builds the C++ worker) "
                                         "or pass --worker PATH", worker));
  const fs::path tmp = fs::temp_directory_path() / fmt::format("autotune-{}-{}", ::getpid(), sub);
  SpawnOptions so;
  so.argv = {worker, sub};
  so.argv.insert(so.argv.end(), args.begin(), args.end());
  so.stdout_path = tmp.string() + ".out";
  so.stderr_path = tmp.string() + ".err";
  so.timeout_seconds = 120;
  so.env = warm_variables();  // unset: named only where it may fork (warm_worker.h)
  // The first command that describes a model or the machine starts the worker's warm worker, which the trials then use.
  use_warm_worker(so.argv, so.env, python_worker_path());
  const ProcessOutcome out = run_process(so);
  const std::string text = read_file(so.stdout_path);
  const std::string err = last_line(tail_of_file(so.stderr_path));
  if (const char* v = std::getenv("AUTOTUNE_VERBOSE"); v && std::string(v) == "1")  // the worker's traceback, as it printed it
    std::cerr << read_file(so.stderr_path);
  fs::remove(so.stdout_path);
  fs::remove(so.stderr_path);
  if (const std::string why = worker_refusal(err); !out.timed_out && !out.signaled && out.exit_code == 2 && !why.empty())
    throw UsageError(why);
  if (out.timed_out || out.signaled || out.exit_code != 0)
    throw std::runtime_error(
        fmt::format("'{} {} --json' failed ({}){}", worker, sub, out.describe(), err.empty() ? "" : ": " + err));
  try {
    return nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("'{} {} --json' printed invalid JSON: {}", worker, sub, e.what()));
  }
}

}  // namespace

std::vector<WorkloadInfo> query_workloads(const std::string& worker, const std::string& plugin) {
  std::vector<std::string> args = {"--json"};
  if (!plugin.empty()) args.insert(args.end(), {"--plugin", plugin});
  return call_worker(worker, "workloads", args).get<std::vector<WorkloadInfo>>();
}

EnvFingerprint query_environment(const std::string& worker) { return call_worker(worker, "info").get<EnvFingerprint>(); }

std::string worker_refusal(const std::string& stderr_text) {
  static const std::string prefix = "autotune-worker: error: ";
  const std::string err = last_line(stderr_text);
  return err.rfind(prefix, 0) == 0 ? err.substr(prefix.size()) : "";
}

WorkloadInfo describe_workload(const std::string& worker, const TrialSetup& setup, bool parameters) {
  // A built-in workload without --data is known from the list; a model, a plugin or data needs the worker
  // to load it (the worker also checks --data, --cache and --init-from there, before any trial runs).
  // The Python worker builds even a built-in workload to describe it (its FLOPs are counted from the build).
  if (!parameters && setup.model.empty() && setup.plugin.empty() && setup.data.empty() && setup.data_cache.empty() &&
      setup.init_from.empty() && trainer_of(setup) != "python")
    return find_workload(query_workloads(worker), setup.workload);
  const fs::path file = fs::temp_directory_path() / fmt::format("autotune-{}-setup.json", ::getpid());
  write_file_atomic(file.string(), nlohmann::json(setup).dump());
  try {
    std::vector<std::string> args = {"--setup", file.string()};
    if (parameters) args.push_back("--parameters");
    WorkloadInfo w = call_worker(worker, "describe", args).get<WorkloadInfo>();
    fs::remove(file);
    return w;
  } catch (...) {
    fs::remove(file);
    throw;
  }
}

const WorkloadInfo& find_workload(const std::vector<WorkloadInfo>& all, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& w : all) {
    if (w.name == name) return w;
    names.push_back(w.name);
  }
  throw UsageError(fmt::format("unknown workload '{}'; known workloads: {}{}", name, join(names), did_you_mean(name, names)));
}

}  // namespace autotune
