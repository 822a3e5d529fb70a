#include "tuner/trial_runner.h"

#include <fmt/format.h>
#include <signal.h>

#include <cstdlib>
#include <filesystem>

#include "tuner/interrupt.h"
#include "tuner/journal.h"
#include "tuner/subprocess.h"

namespace autotune {

namespace fs = std::filesystem;

std::string default_worker_path() {
  if (const char* env = std::getenv("AUTOTUNE_WORKER"); env && *env) return env;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "autotune-worker" : (self.parent_path() / "autotune-worker").string();
}

TrialRecord TrialRunner::run(const TrialPlan& plan, TrialKind kind, int seq) const {
  const fs::path dir = fs::path(opts_.trials_dir()) / fmt::format("{:04d}", seq);
  fs::create_directories(dir);
  const std::string plan_path = (dir / "plan.json").string();
  const std::string result_path = (dir / "result.json").string();
  const std::string stderr_path = (dir / "stderr.log").string();
  fs::remove(result_path);  // a stale result must never pass for this trial's
  write_plan(plan, plan_path);

  TrialRecord rec;
  rec.kind = kind;
  rec.plan = plan;
  rec.started_at = utc_now_iso8601();
  SpawnOptions so;
  so.argv = {opts_.worker(), "run", "--plan", plan_path, "--result", result_path};
  so.stdout_path = (dir / "stdout.log").string();
  so.stderr_path = stderr_path;
  so.timeout_seconds = opts_.timeout_seconds();

  TrialResult& r = rec.result;
  r.workload = plan.setup.workload;
  r.config = plan.config;
  ProcessOutcome out;
  try {
    out = run_process(so);
  } catch (const std::exception& e) {
    r.status = TrialStatus::error;
    r.message = e.what();
    rec.outcome = "not started";
    rec.finished_at = utc_now_iso8601();
    return rec;
  }
  // A trial the user stopped is not a measurement: it never reaches the journal, and --resume runs it again.
  if (out.interrupted) throw Interrupted(interrupt_signal() ? interrupt_signal() : SIGINT);
  rec.outcome = out.describe();
  rec.stderr_tail = tail_of_file(stderr_path);
  rec.finished_at = utc_now_iso8601();
  const std::string err_line = last_line(rec.stderr_tail);

  if (out.timed_out) {
    r.status = TrialStatus::timeout;
    r.message = fmt::format("no result within {:g} s; stopped (SIGTERM, then SIGKILL)", opts_.timeout_seconds());
  } else if (out.signaled) {
    r.status = TrialStatus::crash;
    r.message = fmt::format("worker {}{}", out.describe(), out.signal == 9 ? " — often the kernel's OOM killer" : "");
    if (!err_line.empty()) r.message += ": " + err_line;
  } else if (out.exit_code != 0) {
    r.status = out.exit_code == 2 ? TrialStatus::error : TrialStatus::crash;
    r.message = fmt::format("worker {}: {}", out.describe(), err_line.empty() ? "(no message on stderr)" : err_line);
  } else {
    try {
      r = read_result(result_path);
    } catch (const std::exception& e) {
      r.status = TrialStatus::error;
      r.message = fmt::format("worker exited 0 but its result is unusable: {}", e.what());
    }
  }
  r.wall_seconds = r.wall_seconds > 0 ? r.wall_seconds : out.seconds;
  return rec;
}

}  // namespace autotune
