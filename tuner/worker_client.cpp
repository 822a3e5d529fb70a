#include "tuner/worker_client.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "knobs/did_you_mean.h"
#include "knobs/error.h"
#include "tuner/subprocess.h"

namespace autotune {

namespace fs = std::filesystem;

namespace {

nlohmann::json call_worker(const std::string& worker, const std::string& sub) {
  if (!fs::exists(worker))
    throw std::runtime_error(fmt::format("worker '{}' not found; build it (make build) or pass --worker PATH", worker));
  const fs::path tmp = fs::temp_directory_path() / fmt::format("autotune-{}-{}", ::getpid(), sub);
  SpawnOptions so;
  so.argv = {worker, sub, "--json"};
  so.stdout_path = tmp.string() + ".out";
  so.stderr_path = tmp.string() + ".err";
  so.timeout_seconds = 120;
  const ProcessOutcome out = run_process(so);
  const std::string text = read_file(so.stdout_path);
  const std::string err = last_line(tail_of_file(so.stderr_path));
  fs::remove(so.stdout_path);
  fs::remove(so.stderr_path);
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

std::vector<WorkloadInfo> query_workloads(const std::string& worker) {
  return call_worker(worker, "workloads").get<std::vector<WorkloadInfo>>();
}

EnvFingerprint query_environment(const std::string& worker) { return call_worker(worker, "info").get<EnvFingerprint>(); }

const WorkloadInfo& find_workload(const std::vector<WorkloadInfo>& all, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& w : all) {
    if (w.name == name) return w;
    names.push_back(w.name);
  }
  throw UsageError(fmt::format("unknown workload '{}'; known workloads: {}{}", name, join(names), did_you_mean(name, names)));
}

}  // namespace autotune
