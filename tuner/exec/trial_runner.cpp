#include "tuner/exec/trial_runner.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "knobs/error.h"
#include "knobs/model_spec.h"
#include "tuner/exec/interrupt.h"
#include "tuner/exec/slurm.h"
#include "tuner/measures/journal.h"
#include "tuner/exec/subprocess.h"
#include "tuner/exec/warm_worker.h"

namespace autotune {

namespace fs = std::filesystem;

namespace {

/// `$env` when set, else `name` next to this executable (or bare, for PATH, when /proc/self/exe is unreadable).
std::string beside_self(const char* name, const char* env_var) {
  if (const char* env = std::getenv(env_var); env && *env) return env;
  const std::string self = self_path();
  return self.empty() ? name : (fs::path(self).parent_path() / name).string();
}

}  // namespace

std::string self_path() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "" : self.string();
}

std::string default_worker_path() { return beside_self("autotune-worker", "AUTOTUNE_WORKER"); }

std::string python_worker_path() { return beside_self("autotune-worker-py", "AUTOTUNE_PYTHON_WORKER"); }

std::string default_worker_path(const TrialSetup& setup) {
  return trainer_of(setup) == "python" ? python_worker_path() : default_worker_path();
}

bool cpp_worker_installed() {
  std::error_code ec;
  return fs::exists(default_worker_path(), ec);
}

RunnerOptions& RunnerOptions::launcher(const std::string& l) {
  if (l != "local" && l != "torchrun" && l.find("{cmd}") == std::string::npos)
    throw UsageError(
        fmt::format("--launcher '{}' is not allowed; allowed: local, torchrun, or a command template containing "
                    "{{cmd}} (and optionally {{ranks}}), e.g. \"srun --ntasks={{ranks}} {{cmd}}\"",
                    l));
  launcher_ = l;
  return *this;
}

namespace {

/// A listening TCP socket on 127.0.0.1 with a port the kernel chose: rank 0's store takes it over
/// (no window in which another process could take the port). Close-on-exec except in rank 0.
struct StoreSocket {
  int fd = -1;
  int port = 0;
  StoreSocket() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error("cannot create the store socket");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 128) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ::close(fd);
      throw std::runtime_error("cannot bind the store socket on 127.0.0.1");
    }
    port = ntohs(a.sin_port);
  }
  ~StoreSocket() {
    if (fd >= 0) ::close(fd);
  }
};

/// A free port on this host for launchers that bind it themselves.
int free_port() {
  StoreSocket s;
  return s.port;
}

std::string rank_result_path(const std::string& result, int r) { return r == 0 ? result : fmt::format("{}.rank{}", result, r); }

/// "rank 0 at step 3 backward, rank 1 at step 3 data": where each rank was when the trial was stopped,
/// and which rank is behind (the one the others wait for).
std::string progress_summary(const std::string& result, int ranks) {
  static const char* kPhases[] = {"data", "forward", "backward", "optimizer"};
  std::string s;
  long worst_step = -1;
  int worst = -1, worst_phase = 99;
  bool tie = false;
  for (int r = 0; r < ranks; ++r) {
    const std::string p = last_line(tail_of_file(fmt::format("{}.rank{}.progress", result, r)));
    s += fmt::format("{}rank {} {}", r ? ", " : "", r, p.empty() ? "not started" : "at " + p);
    long step = -1;
    char phase[16] = {0};
    int ph = -1;
    if (std::sscanf(p.c_str(), "step %ld %15s", &step, phase) == 2)
      for (int i = 0; i < 4; ++i)
        if (std::string(phase) == kPhases[i]) ph = i;
    const bool less = worst < 0 || step < worst_step || (step == worst_step && ph < worst_phase);
    const bool same = worst >= 0 && step == worst_step && ph == worst_phase;
    if (less) {
      worst = r;
      worst_step = step;
      worst_phase = ph;
      tie = false;
    } else if (same) {
      tie = true;
    }
  }
  if (worst >= 0 && !tie) s += fmt::format(" — rank {} is behind: the others wait for it", worst);
  else if (worst >= 0) s += " — no rank is behind: a collective never completed";
  return s;
}

/// A worker killed by SIGTERM / SIGINT / SIGHUP that the tuner did not send, while the tuner itself is being stopped:
/// Slurm's requeue or preemption, a CI runner's cancel, signal the whole process tree, and the worker may die before
/// the tuner's own handler has run. Waits up to 2 s for that handler: then the trial is interrupted, not a crash.
bool stopped_with_the_tuner(const ProcessOutcome& out) {
  if (!out.signaled || out.timed_out || (out.signal != SIGTERM && out.signal != SIGINT && out.signal != SIGHUP)) return false;
  for (int i = 0; i < 40 && !interrupt_signal(); ++i) ::usleep(50000);
  return interrupt_signal() != 0;
}

/// The Slurm job name a launcher template's srun gets for the trial in `d` (SLURM_JOB_NAME, outside an allocation).
std::string launcher_job_name(const fs::path& d) { return "autotune-trial-" + slurm_run_name(d.string()); }

/// The processes of a trial with `ranks` ranks: one worker per rank on this host (local: the torchrun environment
/// contract, rank 0 taking over `sock` as its store; null otherwise), or one launcher (torchrun, a template) that starts them all.
std::vector<SpawnOptions> rank_members(const RunnerOptions& opts, int ranks, const fs::path& d, const Slot& slot,
                                       const std::vector<std::string>& worker_cmd, const StoreSocket* sock) {
  std::vector<SpawnOptions> members;
  if (opts.launcher() == "local") {
    for (int r = 0; r < ranks; ++r) {
      SpawnOptions so;
      so.argv = worker_cmd;
      so.stdout_path = (d / (r ? fmt::format("stdout.rank{}.log", r) : "stdout.log")).string();
      so.stderr_path = (d / (r ? fmt::format("stderr.rank{}.log", r) : "stderr.log")).string();
      so.env = {fmt::format("RANK={}", r),
                fmt::format("LOCAL_RANK={}", r),
                fmt::format("WORLD_SIZE={}", ranks),
                fmt::format("LOCAL_WORLD_SIZE={}", ranks),
                "MASTER_ADDR=127.0.0.1",
                fmt::format("MASTER_PORT={}", sock->port),
                "AUTOTUNE_LAUNCHER=local"};
      so.cpus = slot.cpus;
      for (const auto& e : slot.env()) so.env.push_back(e);
      if (r == 0) {
        so.env.push_back(fmt::format("AUTOTUNE_STORE_FD={}", sock->fd));
        so.inherit_fd = sock->fd;
      }
      members.push_back(so);
    }
  } else {
    SpawnOptions so;
    so.stdout_path = (d / "stdout.log").string();
    so.stderr_path = (d / "stderr.log").string();
    if (opts.launcher() == "torchrun") {
      so.argv = {"/usr/bin/env", "torchrun", "--standalone", fmt::format("--nproc_per_node={}", ranks), "--no-python"};
      so.argv.insert(so.argv.end(), worker_cmd.begin(), worker_cmd.end());
    } else {
      const std::string cmd = shell_command(worker_cmd);
      std::string t = opts.launcher();
      for (std::string::size_type p; (p = t.find("{ranks}")) != std::string::npos;) t.replace(p, 7, std::to_string(ranks));
      for (std::string::size_type p; (p = t.find("{cmd}")) != std::string::npos;) t.replace(p, 5, cmd);
      so.argv = {"/bin/sh", "-c", t};
      // The template's own exports win (a Slurm script sets MASTER_ADDR to its first node); without one a Slurm step's
      // ranks meet on the step's first node, and other launchers where the tuner runs (AUTOTUNE_MASTER_ADDR).
      so.env.push_back(fmt::format("AUTOTUNE_MASTER_ADDR={}", this_host()));
      if (!std::getenv("MASTER_PORT")) so.env.push_back(fmt::format("MASTER_PORT={}", free_port()));
      // An srun outside an allocation makes its own, named so that a trial stopped here can be scancel'ed: an srun
      // killed before it released its allocation leaves it holding the nodes, its tasks on other hosts running.
      if (!std::getenv("SLURM_JOB_ID")) so.env.push_back("SLURM_JOB_NAME=" + launcher_job_name(d));
    }
    so.cpus = slot.cpus;
    for (const auto& e : slot.env()) so.env.push_back(e);
    members.push_back(so);
  }
  return members;
}

/// srun's own line for task `task` ("srun: error: atnode2: task 1: Aborted"): what happened to it, its host in `host`.
std::string srun_task_line(const std::string& stderr_tail, int task, std::string& host) {
  const std::string mark = fmt::format(": task {}: ", task);
  std::istringstream lines(stderr_tail);
  for (std::string l; std::getline(lines, l);) {
    const auto at = l.find(mark);
    if (l.rfind("srun: error: ", 0) != 0 || at == std::string::npos || at < 13) continue;
    host = l.substr(13, at - 13);
    return l.substr(at + mark.size());
  }
  return "";
}

/// "; then rank 0: its error" when rank 0 (not `bad`) wrote a failed result after losing its peer, else "".
std::string peer_error(const std::string& result_path, int bad) {
  if (bad == 0) return "";
  try {
    const TrialResult r0 = read_result(result_path);
    return r0.status == TrialStatus::ok ? "" : "; then rank 0: " + r0.message;
  } catch (const std::exception&) {
    return "";
  }
}

/// The result of a trial whose ranks all ran: rank 0's result when every rank exited 0, else the failing rank's own
/// (OOM, non-finite loss, an error) or, when it wrote none, how its process ended.
void read_ranks_result(TrialRecord& rec, const RunnerOptions& opts, int ranks, const std::string& dir,
                       const std::vector<SpawnOptions>& members, const GroupOutcome& g) {
  TrialResult& r = rec.result;
  const std::string result_path = (fs::path(dir) / "result.json").string();
  const std::string plan_workload = r.workload;
  const Config plan_config = r.config;
  // The failing rank: the first process that failed (local), else the first rank whose own result says
  // it failed (torchrun / a template run all ranks under one process).
  int bad = opts.launcher() == "local" ? g.first_failed : -1;
  // Under one launcher, a rank that left no result at all died (a signal, an abort) and is the cause: the ranks that
  // wrote an error after it mostly report losing it (Gloo's "Connection reset by peer").
  if (bad < 0 && (g.first_failed >= 0 || !fs::exists(result_path))) {
    // Of several ranks without a result, one that srun saw die of SIGPIPE ("Broken pipe") wrote into its dead peer's
    // connection: the peer is the cause, whichever of the two srun reported first.
    for (int k = 0; k < ranks && bad < 0; ++k) {
      std::string host;
      if (!fs::exists(rank_result_path(result_path, k)) &&
          srun_task_line(rec.stderr_tail, k, host).find("Broken pipe") == std::string::npos)
        bad = k;
    }
    for (int k = 0; k < ranks && bad < 0; ++k)
      if (!fs::exists(rank_result_path(result_path, k))) bad = k;
    for (int k = 0; k < ranks && bad < 0; ++k) {
      try {
        if (read_result(rank_result_path(result_path, k)).status != TrialStatus::ok) bad = k;
      } catch (const std::exception&) {
      }
    }
  }
  if (g.first_failed < 0 && bad < 0) {
    rec.outcome = fmt::format("{} ranks: exit 0", ranks);
    try {
      r = read_result(result_path);
    } catch (const std::exception& e) {
      r.status = TrialStatus::error;
      r.message = fmt::format("all {} ranks exited 0 but rank 0's result is unusable: {}", ranks, e.what());
    }
    return;
  }
  const ProcessOutcome& po = g.members[static_cast<std::size_t>(std::max(0, g.first_failed))];
  if (!po.signaled && po.exit_code == kExitDiskFull)  // as in run(): the disk, not the config
    throw DiskFull(dir, "a rank found no room to write its files: " + (last_line(rec.stderr_tail).empty()
                                                                          ? std::string("No space left on device (exit 75)")
                                                                          : last_line(rec.stderr_tail)));
  rec.outcome = bad >= 0 && opts.launcher() == "local" ? fmt::format("rank {}: {}", bad, po.describe()) : po.describe();
  try {  // the rank wrote why it failed (OOM, non-finite loss, an error)
    r = read_result(rank_result_path(result_path, std::max(0, bad)));
    if (r.status == TrialStatus::ok) throw std::runtime_error("ok");
    r.message = fmt::format("rank {} of {}: {}", std::max(0, bad), ranks, r.message);
  } catch (const std::exception&) {
    r = TrialResult{};
    r.workload = plan_workload;
    r.config = plan_config;
    r.status = po.signaled ? TrialStatus::crash : po.exit_code == 2 ? TrialStatus::error : TrialStatus::crash;
    const std::string err = opts.launcher() == "local"
                                ? last_line(tail_of_file(members[static_cast<std::size_t>(std::max(0, bad))].stderr_path))
                                : last_line(rec.stderr_tail);
    r.message = bad >= 0 ? fmt::format("rank {} of {}: worker {}{}", bad, ranks, po.describe(), err.empty() ? "" : ": " + err)
                         : fmt::format("{} ranks: launcher {}{}", ranks, po.describe(), err.empty() ? "" : ": " + err);
    if (std::string host, what = srun_task_line(rec.stderr_tail, bad, host); bad >= 0 && !what.empty())
      r.message = fmt::format("rank {} of {} on {}: {} (srun){}", bad, ranks, host, what, peer_error(result_path, bad));
  }
  r.wall_seconds = r.wall_seconds > 0 ? r.wall_seconds : g.seconds;
}

/// The worker's own last line of `stderr_tail`. Under Slurm (`wrapped`) the last lines are often srun's own
/// ("srun: error: …: task 0: Exited with exit code 3"): the worker's last line says why.
std::string worker_error_line(const std::string& stderr_tail, bool wrapped) {
  std::string err_line = last_line(stderr_tail);
  if (wrapped) {
    std::istringstream lines(stderr_tail);
    std::string worker_line;
    for (std::string l; std::getline(lines, l);)
      if (!l.empty() && l.rfind("srun: ", 0) != 0 && l.rfind("slurmstepd: ", 0) != 0 && l.rfind("sbatch: ", 0) != 0) worker_line = l;
    if (!worker_line.empty()) err_line = worker_line;
  }
  return err_line;
}

/// How one worker process ended, as the trial's status and message: stopped at its timeout, killed by a signal,
/// a failing exit (2: a usage error), or its result as written.
void classify(TrialResult& r, const ProcessOutcome& out, const std::string& err_line, const std::string& result_path,
              double timeout) {
  if (out.timed_out) {
    r.status = TrialStatus::timeout;
    r.message = fmt::format("no result within {:g} s; stopped (SIGTERM, then SIGKILL)", timeout);
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
}

}  // namespace

void TrialRunner::run_ranks(TrialRecord& rec, int ranks, const std::string& dir, const Slot& slot) const {
  const fs::path d(dir);
  const std::string plan_path = (d / "plan.json").string(), result_path = (d / "result.json").string();
  for (int r = 0; r < ranks; ++r) {
    fs::remove(rank_result_path(result_path, r));
    fs::remove(fmt::format("{}.rank{}.progress", result_path, r));
  }
  const std::vector<std::string> worker_cmd = {opts_.worker(), "run", "--plan", plan_path, "--result", result_path};
  if (const std::string why = launcher_overflows_allocation(opts_.launcher(), ranks); !why.empty()) {
    rec.result.status = TrialStatus::error;  // nothing started: srun would refuse it and the message would name a rank
    rec.result.message = why;
    rec.outcome = "not started";
    return;
  }
  auto sock = opts_.launcher() == "local" ? std::make_unique<StoreSocket>() : nullptr;
  const std::vector<SpawnOptions> members = rank_members(opts_, ranks, d, slot, worker_cmd, sock.get());
  TrialResult& r = rec.result;
  GroupOutcome g;
  try {
    g = run_group(members, opts_.timeout_seconds());
  } catch (const std::exception& e) {
    r.status = TrialStatus::error;
    r.message = e.what();
    rec.outcome = "not started";
    return;
  }
  sock.reset();
  // A launcher stopped here (timeout, interrupt) may leave its Slurm job behind, with ranks on other hosts.
  if ((g.timed_out || g.interrupted) && opts_.launcher() != "local" && opts_.launcher() != "torchrun" && on_path("scancel"))
    cancel_named(launcher_job_name(d));
  if (g.interrupted) throw Interrupted(interrupt_signal() ? interrupt_signal() : SIGINT);
  rec.stderr_tail = tail_of_file((d / "stderr.log").string());
  if (g.timed_out) {
    r.status = TrialStatus::timeout;
    r.message = fmt::format("no result within {:g} s; all {} ranks stopped (SIGTERM, then SIGKILL); {}", opts_.timeout_seconds(),
                            ranks, progress_summary(result_path, ranks));
    rec.outcome = fmt::format("timed out after {:.1f} s", g.seconds);
    return;
  }
  read_ranks_result(rec, opts_, ranks, dir, members, g);
}

TrialRecord TrialRunner::run(const TrialPlan& plan, TrialKind kind, int seq, const Slot& slot) const {
  return attempt(plan, kind, seq, slot, {});
}

namespace {

/// A lost attempt's files (logs, where.N, the job script) moved into `dir`/lost-N/, the plan left in place: the
/// next attempt writes fresh ones, and nothing of the lost one passes for its.
void set_aside(const fs::path& dir, std::size_t n) {
  const fs::path to = dir / fmt::format("lost-{}", n);
  fs::create_directories(to);
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != "plan.json") fs::rename(e.path(), to / e.path().filename());
}

/// The worker's process for one trial in `dir`: here, or wrapped by the slot's srun / sbatch.
SpawnOptions worker_spawn(const RunnerOptions& opts, const fs::path& dir, const Slot& slot, int ranks) {
  SpawnOptions so;
  so.argv = {opts.worker(), "run", "--plan", (dir / "plan.json").string(), "--result", (dir / "result.json").string()};
  so.stdout_path = (dir / "stdout.log").string();
  so.stderr_path = (dir / "stderr.log").string();
  so.timeout_seconds = opts.timeout_seconds();
  // One process, even when the tuner itself runs inside a launcher's environment (torchrun, srun):
  // the worker must not take the tuner's WORLD_SIZE for its own.
  // A warm worker given to the tuner (tuner/exec/warm_worker.h) is named only to the commands it may fork.
  so.env = {"WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "SLURM_NTASKS", "SLURM_PROCID"};  // unset
  so.env.insert(so.env.end(), warm_variables().begin(), warm_variables().end());
  so.cpus = slot.cpus;
  for (const auto& e : slot.env()) so.env.push_back(e);
  // One process on this host: forked by the worker's warm worker when there is one (tuner/exec/warm_worker.h).
  if (!slot.wrap && ranks == 1) use_warm_worker(so.argv, so.env, python_worker_path());
  if (slot.wrap) {
    // Slurm runs it (tuner/exec/slurm.h): srun/sbatch with the slot's resources, all ranks as its tasks; the
    // tuner keeps the timeout. Slurm's environment reaches the tasks (srun sets each task's own).
    so.argv = slot.wrap(so.argv, dir.string(), ranks);
    so.env = slot.env();
    so.env.insert(so.env.end(), warm_variables().begin(), warm_variables().end());  // unset: Slurm passes ours on
    if (!slot.exit_file.empty()) so.exit_file = (dir / slot.exit_file).string();
  }
  return so;
}

}  // namespace

TrialRecord TrialRunner::attempt(const TrialPlan& plan, TrialKind kind, int seq, const Slot& slot,
                                 std::vector<std::string> lost) const {
  const fs::path dir = fs::path(opts_.trials_dir()) / fmt::format("{:04d}", seq);
  fs::create_directories(dir);
  const std::string plan_path = (dir / "plan.json").string();
  const std::string result_path = (dir / "result.json").string();
  const std::string stderr_path = (dir / "stderr.log").string();
  fs::remove(result_path);  // a stale result must never pass for this trial's
  if (!slot.exit_file.empty()) fs::remove(dir / slot.exit_file);  // nor a stale exit status
  write_plan(plan, plan_path);

  TrialRecord rec;
  rec.kind = kind;
  rec.plan = plan;
  rec.started_at = utc_now_iso8601();
  const int ranks = std::stoi(plan.config.get("ranks", "1"));
  const SpawnOptions so = worker_spawn(opts_, dir, slot, ranks);

  TrialResult& r = rec.result;
  r.workload = plan.setup.workload;
  r.config = plan.config;
  if (ranks > 1 && !slot.wrap) {
    run_ranks(rec, ranks, dir.string(), slot);
    rec.finished_at = utc_now_iso8601();
    return rec;
  }
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
  // What Slurm may still run for a trial stopped here (its srun or sbatch was killed) is cancelled.
  if (slot.cancel && (out.timed_out || out.interrupted || out.signaled)) slot.cancel(dir.string());
  // A trial the user stopped is not a measurement: it never reaches the journal, and --resume runs it again.
  if (out.interrupted || stopped_with_the_tuner(out)) throw Interrupted(interrupt_signal() ? interrupt_signal() : SIGINT);
  rec.outcome = out.describe();
  rec.stderr_tail = tail_of_file(stderr_path);
  rec.finished_at = utc_now_iso8601();
  const std::string err_line = worker_error_line(rec.stderr_tail, static_cast<bool>(slot.wrap));
  // No room for the worker's files is the disk's fault, not the config's: the run stops, nothing is
  // journaled for this trial, and --resume runs it again once there is room.
  if (!out.signaled && out.exit_code == kExitDiskFull)
    throw DiskFull(dir.string(), "the worker found no room to write its files: " +
                                     (err_line.empty() ? "No space left on device (exit 75; its stderr.log could not be written either)"
                                                       : err_line));

  // A node lost under the trial is the infrastructure's failure, not the config's: set aside, run once more elsewhere.
  if (slot.lost && !out.timed_out && !fs::exists(result_path))
    if (std::string why = slot.lost(dir.string()); !why.empty()) {
      lost.push_back(fmt::format("{}, {:.1f} s into the trial", why, out.seconds));
      if (lost.size() > 1)
        throw InfrastructureLost(fmt::format("trial {:04d} was lost to the infrastructure twice ({}); nothing of it was "
                                             "measured or journaled: run again with --resume once the cluster is healthy",
                                             seq, fmt::join(lost, "; then ")));
      set_aside(dir, lost.size());
      return attempt(plan, kind, seq, slot, std::move(lost));
    }
  classify(r, out, err_line, result_path, opts_.timeout_seconds());
  r.wall_seconds = r.wall_seconds > 0 ? r.wall_seconds : out.seconds;
  if (!lost.empty()) {
    Placement p;
    p.lost = std::move(lost);
    r.placement = p;  // the executor fills the rest and keeps these
  }
  return rec;
}

}  // namespace autotune
