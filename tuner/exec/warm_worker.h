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

/// The same for the C++ worker (docs/design.md, "The warm C++ worker"): one `WORKER serve` per tuner process (or one
/// given in AUTOTUNE_WARM_CPP_SOCKET / AUTOTUNE_WARM_CPP_PID), LibTorch loaded once, a child forked per command; what
/// to add to a command's environment, or nothing when it is off or stopped.
std::vector<std::string> warm_cpp_worker_env(const std::string& worker);

/// One single-process command of a worker on this host, made to fork from its warm worker where it may: the Python
/// worker's launcher (`python_worker`) is its own client and gets the variables; the C++ worker (a binary named
/// autotune-worker) gets them and `autotune --warm-client` (the binary beside it, tuner/exec/warm_client.h) in front
/// of `argv`. Anything else, or a warm worker that is off, leaves both as they are.
void use_warm_worker(std::vector<std::string>& argv, std::vector<std::string>& env, const std::string& python_worker);

/// Every variable that names a warm worker (both kinds): unset for commands that must start fresh.
const std::vector<std::string>& warm_variables();

/// Stops the warm workers now (also run at exit); the next warm_worker_env starts none again.
void stop_warm_worker();

}  // namespace autotune
