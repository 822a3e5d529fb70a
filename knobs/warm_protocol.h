#pragma once
#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace autotune::warm {

/// The C++ warm worker's wire format (docs/design.md, "The warm C++ worker"), shared by its client (the tuner's
/// `autotune --warm-client`, tuner/exec/warm_client.h) and its server (`autotune-worker serve`,
/// workloads/warm_server.h). The shape is the Python warm worker's (pyworker/autotune_pyworker/warm.py): a request is
/// a 4-byte big-endian length and a JSON object, sent with the client's standard streams (three descriptors,
/// SCM_RIGHTS); the server answers with newline-terminated JSON messages: {"pid": N} once the command runs in a child,
/// then {"exit": code} or {"signal": n} when it ended; or {"cold": why} instead of the first, and the client then runs
/// the command in a fresh process.
struct Request {
  std::string host;           ///< the client's host name
  unsigned long netns = 0;    ///< its network namespace (the inode of /proc/self/ns/net)
  unsigned uid = 0;           ///< its user
  std::string exe;            ///< the worker binary it would start (absolute): the server must be that binary
  std::vector<std::string> argv;  ///< the worker's arguments, without the program name
  std::map<std::string, std::string> env;
  std::string cwd;
  std::vector<int> cpus;      ///< the CPUs it may run on
};

/// This process's side of a request for running `exe` with `argv`: its host, namespace, user, environment (less the
/// warm worker's own variables), folder and CPUs.
Request this_process(const std::string& exe, std::vector<std::string> argv);

/// Variables a command may set differently from the server's environment: read after the fork (thread counts, applied
/// in the child; the visible GPUs, CUDA never being initialised in the server; the ranks' variables), or by nothing.
bool per_command(const std::string& name);

/// Why `request` cannot be served by forking a server whose own side (this_process in the server, at its start) is
/// `mine` (another host, namespace, user or binary; an environment that differs from mine.env in a variable not
/// per_command), or "" when a fork is the same as a fresh start.
std::string refusal(const Request& request, const Request& mine);

/// Sends `request` with descriptors 0, 1 and 2 over the connected socket `sock`; false when it could not.
bool send_request(int sock, const Request& request);

/// Receives a request and its three descriptors (into `fds`) from `conn`; nothing when the request is malformed (any
/// descriptor received is then closed).
std::optional<Request> receive_request(int conn, int fds[3]);

/// One message line ("{...}\n") written whole to `fd`; false when the peer is gone.
bool send_line(int fd, const std::string& json);

/// The next message line from `fd` (bytes beyond it kept in `buffer`), without its newline; nothing at the end.
std::optional<std::string> read_line(int fd, std::string& buffer);

/// Variables that name a warm worker to a process (removed from a fresh start's environment and from a request's).
inline constexpr const char* kSocketVar = "AUTOTUNE_WARM_CPP_SOCKET";
inline constexpr const char* kPidVar = "AUTOTUNE_WARM_CPP_PID";

}  // namespace autotune::warm
