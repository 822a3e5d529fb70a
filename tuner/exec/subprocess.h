#pragma once
#include <string>
#include <vector>

namespace autotune {

/// How a child process ended.
struct ProcessOutcome {
  int exit_code = -1;  ///< valid when !signaled && !timed_out
  int signal = 0;      ///< the terminating signal when signaled
  bool signaled = false;
  bool timed_out = false;        ///< we stopped it after the timeout (SIGTERM, then SIGKILL after the grace)
  bool interrupted = false;      ///< we stopped it because the tuner was asked to stop (tuner/exec/interrupt.h)
  double seconds = 0;            ///< wall time
  std::string describe() const;  ///< "exit 0", "killed by signal 11 (SIGSEGV)", "timed out after 30.0 s"
};

struct SpawnOptions {
  std::vector<std::string> argv;  ///< argv[0] is the program path
  std::string stdout_path;        ///< "" → /dev/null
  std::string stderr_path;        ///< "" → /dev/null
  double timeout_seconds = 0;     ///< 0 → no timeout
  double kill_grace_seconds = 5;  ///< SIGTERM → SIGKILL delay
  /// "NAME=value" added to (or replacing in) the tuner's environment; "NAME" alone removes it (a variable set empty is
  /// still set: Python code reading int(os.environ["LOCAL_RANK"]) fails on it, as Lightning's does).
  std::vector<std::string> env;
  int inherit_fd = -1;            ///< a descriptor the child keeps open across exec (others are close-on-exec)
  std::vector<int> cpus;          ///< non-empty: the child runs on these CPUs only (sched_setaffinity before exec)
  /// Non-empty: the child only waits for work done elsewhere (`sbatch --wait`, which asks Slurm after 2, 8, then every
  /// 32 s), and that work writes its exit status to this file as its last act. Once the file holds a status, the
  /// child is stopped and the status is the outcome (a shell's 128+N as signal N), within ~0.1 s of the work's end.
  std::string exit_file;
};

/// How a group of processes started together (the ranks of one trial) ended.
struct GroupOutcome {
  std::vector<ProcessOutcome> members;  ///< per member, in start order
  int first_failed = -1;  ///< the member that exited non-zero or was killed by a signal first (the others were then stopped)
  bool timed_out = false, interrupted = false;
  double seconds = 0;
};

/// Runs a child in its own process group and waits for it. The child dies with us (PR_SET_PDEATHSIG: with
/// the thread that forked it, which is the one waiting here until the child is gone — an executor thread in a
/// parallel run), so a tuner killed mid-trial leaves no orphan worker holding the device. Between fork and
/// exec the child makes only async-signal-safe calls (the tuner has threads). A SIGINT/SIGTERM to the
/// tuner (tuner/exec/interrupt.h) stops the child's group the same way a timeout does (`interrupted`).
/// Throws std::runtime_error only when the child cannot be started at all.
ProcessOutcome run_process(const SpawnOptions& opts);

/// Starts every member in one process group and waits for all. When one exits non-zero or dies from a
/// signal, the rest are stopped at once (SIGTERM, then SIGKILL after the grace) — a rank that failed
/// leaves the others waiting in a collective forever. The timeout, the tuner's interrupt and the
/// tuner's own death stop them all as run_process does. Throws std::runtime_error when a member cannot
/// be started (the ones already started are killed first).
GroupOutcome run_group(const std::vector<SpawnOptions>& members, double timeout_seconds, double kill_grace_seconds = 5);

/// `s` as one word for /bin/sh ('…', with ' written '\'').
std::string shell_quote(const std::string& s);
/// `argv` as one /bin/sh command line, each word quoted.
std::string shell_command(const std::vector<std::string>& argv);
/// This host's name (gethostname), "" when it cannot be read.
std::string this_host();

/// The last `max_bytes` of a file (whole lines where possible), "" if unreadable.
std::string tail_of_file(const std::string& path, std::size_t max_bytes = 2048);
/// The last non-empty line of `text`.
std::string last_line(const std::string& text);

}  // namespace autotune
