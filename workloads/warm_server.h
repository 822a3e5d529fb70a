#pragma once
#include <sys/types.h>

#include <functional>
#include <string>

namespace autotune {

/// The warm C++ worker (docs/design.md, "The warm C++ worker"): `autotune-worker serve --socket PATH --parent PID`
/// has loaded LibTorch once (its libraries' start-up is most of a fresh worker's first second) and forks a child per
/// request (knobs/warm_protocol.h) that becomes the command: its standard streams, folder, environment and CPUs are
/// the client's, and it runs `cli` with the client's arguments. The server never builds a model, runs an operator or
/// touches a device; a request it cannot serve as a fresh start would run it (another host, namespace, user or binary,
/// an environment that differs in a variable read before the fork, or a thread already running in the server) is
/// answered "cold". A client that goes away takes its child's process group with it; the server stops when `parent`
/// is gone or on SIGTERM, and its children die with it. Returns the exit code.
int serve(const std::string& socket_path, pid_t parent, const std::string& exe,
          const std::function<int(int, char**)>& cli);

/// Whether this process is a command forked by the warm worker (result.json's `started`: "forked").
bool started_forked();

}  // namespace autotune
