#pragma once
#include <string>
#include <vector>

namespace autotune {

/// One single-process command of a worker on this host, made to fork from its warm worker where it may (docs/design.md,
/// "The warm Python worker", "The warm C++ worker"). Each kind has one server per tuner process, `WORKER serve`, started
/// on the first command that asks for it: the Python worker's has imported torch once, the C++ worker's has loaded
/// LibTorch once, and each forks a child per later command. The Python worker's launcher (`python_worker`) is its own
/// client and gets the variables that name its server (AUTOTUNE_WARM_SOCKET, AUTOTUNE_WARM_PID); the C++ worker (a
/// binary named autotune-worker) gets its own (AUTOTUNE_WARM_CPP_SOCKET, AUTOTUNE_WARM_CPP_PID) and
/// `autotune --warm-client` (the binary beside it, tuner/exec/warm_client.h) in front of `argv`. Anything else, or a
/// warm worker that is off (AUTOTUNE_WARM=0), could not be started or has stopped, leaves both as they are: the command
/// starts fresh. Call it only for commands with one process on this host (a rank of a multi-process trial, a Slurm
/// step or a torchrun launch starts fresh). Safe to call from several threads. A server is stopped when this process
/// exits (and stops by itself when its parent is gone). A server given in this process's own environment (those
/// variables: one started for many autotune commands) is used instead while its process runs, and never stopped here.
void use_warm_worker(std::vector<std::string>& argv, std::vector<std::string>& env, const std::string& python_worker);

/// Every variable that names a warm worker (both kinds): unset for commands that must start fresh.
const std::vector<std::string>& warm_variables();

/// Stops the warm workers now (also run at exit); no later command starts one again.
void stop_warm_worker();

}  // namespace autotune
