#pragma once
// Ctrl-C and a CI runner's SIGTERM, handled: the first SIGINT/SIGTERM asks the run to stop — no new
// trial starts, the running worker's process group is stopped (SIGTERM, then SIGKILL after the grace),
// the trials that finished stay in the journal, the reports are written for them (marked interrupted)
// and the command says how to resume, exiting 128 + the signal (130, 143). A second signal stops at
// once: the worker group is killed and the process exits, still leaving no worker behind. A SIGKILL
// of the tuner keeps the older guarantee: workers die with it (PR_SET_PDEATHSIG, tuner/exec/subprocess.h).
#include <stdexcept>
#include <string>

namespace autotune {

/// Installs the handlers (idempotent). Commands that run trials call it first.
void install_interrupt_handlers();
/// The signal that asked the run to stop now (SIGINT, SIGTERM: the running trials are stopped too), 0 if none.
int interrupt_signal();
/// The signal that asked the run to stop: interrupt_signal(), else SIGUSR1 — Slurm's warning before a time limit or
/// a preemption (`sbatch --signal=B:USR1@SECONDS`), on which no new trial starts but the ones running finish and are
/// kept. The run loops check this one before each trial; only interrupt_signal() stops a running trial.
int stop_signal();
/// For tests: forget an earlier request.
void clear_interrupt();
/// run_process / run_group record each process group they wait on (several when trials run in parallel
/// slots, tuner/exec/executor.h), so a second signal can kill them all at once. Up to 256 at a time.
void add_child_group(int pgid);
void remove_child_group(int pgid);

/// Thrown out of a run when it was asked to stop; the command turns it into its exit status.
struct Interrupted : std::runtime_error {
  explicit Interrupted(int sig);
  int signal;
  int exit_status() const { return 128 + signal; }
};

}  // namespace autotune
