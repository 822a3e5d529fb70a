#include "tuner/exec/subprocess.h"

#include <fcntl.h>
#include <sched.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "tuner/exec/interrupt.h"

namespace autotune {

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void redirect(const std::string& path, int fd) {
  const int f = path.empty() ? open("/dev/null", O_WRONLY) : open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (f < 0) _exit(126);
  dup2(f, fd);
  close(f);
}

enum class Waited { exited, deadline, interrupted, exit_file };

/// The status in an exit file (SpawnOptions::exit_file): one decimal number and a newline; -1 while it has none.
int read_exit_file(const std::string& path) {
  std::ifstream in(path);
  int status = -1;
  if (!(in >> status) || status < 0 || status > 255) return -1;
  return status;
}

/// Waits for `pid` up to `deadline` (steady seconds; <0 = forever), or until the tuner is asked to stop
/// when `watch_interrupt`, or until `exit_file` (when not empty) holds a status. Polls every 10 ms (the
/// file every 100 ms): a blocking waitpid would not see the request.
Waited wait_until(pid_t pid, double deadline, int& status, bool watch_interrupt = false, const std::string& exit_file = "") {
  for (int i = 0;; ++i) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return Waited::exited;
    if (r < 0 && errno != EINTR) return Waited::exited;  // already reaped: treat as gone
    if (watch_interrupt && interrupt_signal() != 0) return Waited::interrupted;
    if (deadline >= 0 && now() >= deadline) return Waited::deadline;
    if (!exit_file.empty() && i % 10 == 0 && read_exit_file(exit_file) >= 0) return Waited::exit_file;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

/// The environment of a child: ours with `extra` ("NAME=value") added or replacing.
std::vector<std::string> child_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const std::string name = kv.substr(0, kv.find('='));
    bool replaced = false;
    for (const auto& x : extra) replaced = replaced || x.substr(0, x.find('=')) == name;
    if (!replaced) out.push_back(kv);
  }
  for (const auto& x : extra)
    if (x.find('=') != std::string::npos) out.push_back(x);  // "NAME" alone: removed, not added
  return out;
}

/// Forks and execs one process into process group `pgid` (0: a new group led by the child); it dies
/// with us (PR_SET_PDEATHSIG). A pipe with O_CLOEXEC tells whether exec succeeded: it closes on exec,
/// or carries errno. Returns the pid; throws when fork or exec fails.
pid_t start_member(const SpawnOptions& o, pid_t pgid) {
  std::vector<char*> argv;
  for (const auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::vector<std::string> env = child_environment(o.env);
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) throw std::runtime_error("cannot start a process: pipe failed");
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("cannot start a process: fork failed: {}", std::strerror(errno)));
  if (pid == 0) {
    setpgid(0, pgid);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // parent already gone
    redirect(o.stdout_path, STDOUT_FILENO);
    redirect(o.stderr_path, STDERR_FILENO);
    if (o.inherit_fd >= 0) fcntl(o.inherit_fd, F_SETFD, 0);
    if (!o.cpus.empty()) {  // a parallel slot's cores: the worker and every thread it starts stay on them
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int c : o.cpus) CPU_SET(c, &set);
      if (sched_setaffinity(0, sizeof set, &set) != 0) _exit(126);
    }
    execve(argv[0], argv.data(), envp.data());
    const int e = errno;
    (void)!write(err_pipe[1], &e, sizeof e);
    _exit(127);
  }
  setpgid(pid, pgid ? pgid : pid);  // also in the parent: no race with the child's own call
  close(err_pipe[1]);
  int exec_errno = 0;
  const bool exec_failed = read(err_pipe[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  close(err_pipe[0]);
  if (exec_failed) {
    int st;
    waitpid(pid, &st, 0);
    throw std::runtime_error(fmt::format("cannot run {}: {}", o.argv[0], std::strerror(exec_errno)));
  }
  return pid;
}

void set_exit(ProcessOutcome& o, int status) {
  if (WIFSIGNALED(status)) {
    o.signaled = true;
    o.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    o.exit_code = WEXITSTATUS(status);
  }
}

}  // namespace

GroupOutcome run_group(const std::vector<SpawnOptions>& members, double timeout_seconds, double kill_grace_seconds) {
  if (members.empty()) throw std::runtime_error("run_group: no members");
  GroupOutcome out;
  out.members.resize(members.size());
  std::vector<pid_t> pids;
  const double t0 = now();
  pid_t pgid = 0;
  try {
    for (const auto& m : members) {
      if (m.argv.empty()) throw std::runtime_error("run_group: empty argv");
      pids.push_back(start_member(m, pgid));
      if (pgid == 0) {
        pgid = pids.front();
        add_child_group(pgid);  // a second Ctrl-C kills the whole group at once
      }
    }
  } catch (...) {
    if (pgid) kill(-pgid, SIGKILL);
    for (pid_t p : pids) {
      int st;
      waitpid(p, &st, 0);
    }
    if (pgid) remove_child_group(pgid);
    throw;
  }
  std::vector<bool> done(pids.size(), false);
  std::size_t left = pids.size();
  const double deadline = timeout_seconds > 0 ? t0 + timeout_seconds : -1;
  double stop_at = -1;  // when the group was told to stop (SIGTERM); SIGKILL after the grace
  auto stop = [&] {
    if (stop_at >= 0) return;
    kill(-pgid, SIGTERM);
    stop_at = now();
  };
  while (left > 0) {
    for (std::size_t i = 0; i < pids.size(); ++i) {
      if (done[i]) continue;
      int status = 0;
      const pid_t r = waitpid(pids[i], &status, WNOHANG);
      if (r == 0 || (r < 0 && errno == EINTR)) continue;
      done[i] = true;
      --left;
      out.members[i].seconds = now() - t0;
      if (r == pids[i]) set_exit(out.members[i], status);
      const bool failed = out.members[i].signaled || out.members[i].exit_code != 0;
      if (failed && stop_at < 0 && out.first_failed < 0) {
        out.first_failed = static_cast<int>(i);
        stop();
      }
    }
    if (left == 0) break;
    if (stop_at < 0 && interrupt_signal() != 0) {
      out.interrupted = true;
      stop();
    }
    if (stop_at < 0 && deadline >= 0 && now() >= deadline) {
      out.timed_out = true;
      stop();
    }
    if (stop_at >= 0 && now() >= stop_at + kill_grace_seconds) kill(-pgid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(-pgid, SIGKILL);  // anything a member left behind in the group
  remove_child_group(pgid);
  out.seconds = now() - t0;
  return out;
}

std::string ProcessOutcome::describe() const {
  if (interrupted) return fmt::format("stopped after {:.1f} s: the tuner was interrupted", seconds);
  if (timed_out) return fmt::format("timed out after {:.1f} s", seconds);
  if (signaled) {
    const char* name = sigabbrev_np(signal);
    return fmt::format("killed by signal {} (SIG{})", signal, name ? name : "?");
  }
  return fmt::format("exit {}", exit_code);
}

ProcessOutcome run_process(const SpawnOptions& opts) {
  if (opts.argv.empty()) throw std::runtime_error("run_process: empty argv");
  const double t0 = now();
  const pid_t pid = start_member(opts, 0);  // its own process group
  add_child_group(pid);                     // a second Ctrl-C kills this group at once

  ProcessOutcome out;
  int status = 0;
  const double deadline = opts.timeout_seconds > 0 ? t0 + opts.timeout_seconds : -1;
  const Waited w = wait_until(pid, deadline, status, /*watch_interrupt=*/true, opts.exit_file);
  if (w == Waited::exit_file) {
    // The work is done and said how it ended: the waiter has nothing left to learn.
    kill(-pid, SIGKILL);
    wait_until(pid, -1, status);
    remove_child_group(pid);
    out.seconds = now() - t0;
    const int code = read_exit_file(opts.exit_file);
    if (code > 128 && code < 128 + 65) {
      out.signaled = true;
      out.signal = code - 128;
    } else {
      out.exit_code = code;
    }
    return out;
  }
  if (w != Waited::exited) {
    (w == Waited::deadline ? out.timed_out : out.interrupted) = true;
    kill(-pid, SIGTERM);
    if (wait_until(pid, now() + opts.kill_grace_seconds, status) != Waited::exited) {
      kill(-pid, SIGKILL);
      wait_until(pid, -1, status);
    }
  }
  kill(-pid, SIGKILL);  // anything the worker left behind in its group
  remove_child_group(pid);
  out.seconds = now() - t0;
  if (!out.timed_out && !out.interrupted) set_exit(out, status);
  return out;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string shell_command(const std::vector<std::string>& argv) {
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + shell_quote(a);
  return cmd;
}

std::string this_host() {
  char host[256] = {0};
  return gethostname(host, sizeof host - 1) == 0 ? host : "";
}

std::string tail_of_file(const std::string& path, std::size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff start = size > static_cast<std::streamoff>(max_bytes) ? size - max_bytes : 0;
  in.seekg(start);
  std::string s(static_cast<size_t>(size - start), '\0');
  in.read(s.data(), static_cast<std::streamsize>(s.size()));
  if (start > 0) {
    const auto nl = s.find('\n');
    if (nl != std::string::npos) s.erase(0, nl + 1);
  }
  return s;
}

std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of(" \r\n\t");
  if (end == std::string::npos) return "";
  size_t begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1, end - (begin == std::string::npos ? 0 : begin + 1) + 1);
}

}  // namespace autotune
