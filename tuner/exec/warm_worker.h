#pragma once
#include <string>
#include <vector>

namespace autotune {

/// The warm Python worker (pyworker/autotune_pyworker/warm.py): one `PYTHON_WORKER serve` process per tuner process,
/// started on the first Python worker command that asks for it, which has imported torch once and forks a child for
/// each later command, so a trial starts without ~5 s of imports. Returns what to add to such a command's environment
/// ("AUTOTUNE_WARM_SOCKET=…", "AUTOTUNE_WARM_PID=…"), or nothing when the warm worker is off (AUTOTUNE_WARM=0), could
/// not be started, or has stopped: then the command starts cold, as before. `python_worker` is the launcher to run
/// `serve` with; call it only for commands on this host with one process (a rank of a multi-process trial, a Slurm
/// step or a torchrun launch starts cold). Safe to call from several threads. The server is stopped when this
/// process exits (and stops by itself when its parent is gone). A server given in this process's own environment
/// (AUTOTUNE_WARM_SOCKET and AUTOTUNE_WARM_PID: one started for many autotune commands, docs/design.md) is used
/// instead while its process runs, and never stopped here.
std::vector<std::string> warm_worker_env(const std::string& python_worker);

/// Stops the warm worker now (also run at exit); the next warm_worker_env starts none again.
void stop_warm_worker();

}  // namespace autotune
