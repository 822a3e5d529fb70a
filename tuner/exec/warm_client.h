#pragma once

namespace autotune {

/// The warm C++ worker's client (docs/design.md, "The warm C++ worker"): `autotune --warm-client WORKER ARGS…` is the
/// process the tuner starts, times, signals and kills for one command of the C++ worker. It asks the server named in
/// its environment (AUTOTUNE_WARM_CPP_SOCKET and AUTOTUNE_WARM_CPP_PID, knobs/warm_protocol.h) to fork the command with
/// this process's standard streams, folder, environment and CPUs, forwards the signals it gets to that child, and exits
/// as the child did (its code, or the same signal). Without a server, or when the server answers "cold" (or goes away
/// before forking), it becomes `WORKER ARGS…` itself (exec), a fresh start as without a warm worker. `argv[0]` is
/// WORKER. Never returns on a fresh start.
int warm_client_main(int argc, char** argv);

}  // namespace autotune
