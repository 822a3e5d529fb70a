#include "tuner/exec/warm_worker.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>

#include "knobs/warm_protocol.h"

extern char** environ;

namespace autotune {

namespace fs = std::filesystem;

namespace {

struct WarmWorker {
  std::mutex mutex;
  bool tried = false;  ///< started once, or found off: never again in this process
  pid_t pid = -1;      ///< the server this process started (and stops)
  pid_t shared = -1;   ///< a server this process was given (AUTOTUNE_WARM_SOCKET/PID in its environment): used, never stopped
  std::string dir, socket;
};

/// The two kinds' variables and servers.
struct Kind {
  const char* socket_var;
  const char* pid_var;
  WarmWorker w;
};

Kind& python_kind() {
  static Kind k{"AUTOTUNE_WARM_SOCKET", "AUTOTUNE_WARM_PID", {}};
  return k;
}

Kind& cpp_kind() {
  static Kind k{warm::kSocketVar, warm::kPidVar, {}};
  return k;
}

/// `WORKER serve --socket DIR/worker.sock --parent PID` in a session of its own (no trial's process group, no terminal's
/// Ctrl-C), its output in DIR/serve.log; -1 when it cannot be started.
pid_t spawn_server(const std::string& worker, const std::string& dir, const std::string& sock) {
  std::vector<std::string> env_text;
  for (char** e = environ; e && *e; ++e)
    if (std::strncmp(*e, "AUTOTUNE_WARM_", 14) != 0) env_text.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  // --parent: this process, which the server outlives by at most half a second, even if it dies before it is ready
  std::string a0 = worker, a1 = "serve", a2 = "--socket", a3 = sock, a4 = "--parent", a5 = std::to_string(::getpid());
  char* argv[] = {a0.data(), a1.data(), a2.data(), a3.data(), a4.data(), a5.data(), nullptr};
  const std::string log = dir + "/serve.log";
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawnattr_init(&at);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE, SIGUSR1, SIGUSR2}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setsigdefault(&at, &defaults);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, worker.c_str(), &fa, &at, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  return rc == 0 ? pid : -1;
}

/// Whether the server is still running (reaps it when it is not).
bool alive(pid_t pid) {
  int status = 0;
  return pid > 0 && ::waitpid(pid, &status, WNOHANG) == 0;
}

void stop_at_exit() { stop_warm_worker(); }

/// Starts this process's own server in a private folder (stopped at exit); false when it cannot.
bool start(WarmWorker& w, const std::string& worker) {
  std::string tmpl = (fs::temp_directory_path() / "autotune-warm-XXXXXX").string();
  const std::string sock = tmpl + "/worker.sock";
  // The server binds PATH.PID first: a path too long for a socket address means no server.
  if (sock.size() + 12 > sizeof(sockaddr_un{}.sun_path) || !::mkdtemp(tmpl.data())) return false;
  w.dir = tmpl;
  w.socket = w.dir + "/worker.sock";
  w.pid = spawn_server(worker, w.dir, w.socket);
  if (w.pid <= 0) {
    std::error_code ec;
    fs::remove_all(w.dir, ec);
    w.dir.clear();
    return false;
  }
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(stop_at_exit); });
  return true;
}

/// The server named in this process's own environment (AUTOTUNE_WARM_SOCKET and AUTOTUNE_WARM_PID, or the C++ kind's,
/// set by whoever started one for many autotune commands, as the test suite does), when its process is there; -1
/// otherwise. Whether it is ready is the client's to wait for (warm.py's connect, warm_client.cpp's), as with a server
/// started here.
pid_t given_server(const Kind& k, std::string& socket) {
  const char* sock = std::getenv(k.socket_var);
  const char* pid_text = std::getenv(k.pid_var);
  if (!sock || !*sock || !pid_text) return -1;
  char* end = nullptr;
  const long pid = std::strtol(pid_text, &end, 10);
  if (pid <= 1 || *end != '\0' || ::kill(static_cast<pid_t>(pid), 0) != 0) return -1;
  socket = sock;
  return static_cast<pid_t>(pid);
}

/// What to add to a command's environment to name kind k's server (started here on the first call, with `worker`, or
/// given), or nothing when it is off, could not be started or has stopped.
std::vector<std::string> env_of(Kind& k, const std::string& worker) {
  WarmWorker& w = k.w;
  std::lock_guard<std::mutex> lock(w.mutex);
  if (!w.tried) {
    w.tried = true;
    if (const char* off = std::getenv("AUTOTUNE_WARM"); off && std::string(off) == "0") return {};
    w.shared = given_server(k, w.socket);
    if (w.shared <= 0 && !start(w, worker)) return {};
  }
  // Ours is our child (alive() reaps it); a given one is not: it is asked for by signal 0.
  const bool given = w.shared > 0;
  pid_t& server = given ? w.shared : w.pid;
  if (!(given ? ::kill(server, 0) == 0 : alive(server))) {  // it stopped: every later command starts cold
    server = -1;
    return {};
  }
  return {std::string(k.socket_var) + "=" + w.socket, std::string(k.pid_var) + "=" + std::to_string(server)};
}

void stop(WarmWorker& w) {
  std::lock_guard<std::mutex> lock(w.mutex);
  w.tried = true;
  if (w.pid > 0) {
    ::kill(w.pid, SIGTERM);  // it kills what it still runs, removes its socket and exits
    int status = 0;
    for (int i = 0; i < 100 && ::waitpid(w.pid, &status, WNOHANG) == 0; ++i) ::usleep(20000);
    if (::waitpid(w.pid, &status, WNOHANG) == 0) {
      ::kill(w.pid, SIGKILL);
      ::waitpid(w.pid, &status, 0);
    }
    w.pid = -1;
  }
  if (!w.dir.empty()) {
    std::error_code ec;
    fs::remove_all(w.dir, ec);
    w.dir.clear();
  }
}

}  // namespace

void use_warm_worker(std::vector<std::string>& argv, std::vector<std::string>& env, const std::string& python_worker) {
  if (argv.empty()) return;
  if (argv[0] == python_worker) {
    for (const auto& e : env_of(python_kind(), python_worker)) env.push_back(e);
    return;
  }
  const fs::path client = fs::path(argv[0]).parent_path() / "autotune";
  if (fs::path(argv[0]).filename() != "autotune-worker" || ::access(client.c_str(), X_OK) != 0) return;
  const auto vars = env_of(cpp_kind(), argv[0]);
  if (vars.empty()) return;
  env.insert(env.end(), vars.begin(), vars.end());
  argv.insert(argv.begin(), {client.string(), "--warm-client"});
}

const std::vector<std::string>& warm_variables() {
  static const std::vector<std::string> names = {"AUTOTUNE_WARM_SOCKET", "AUTOTUNE_WARM_PID", warm::kSocketVar,
                                                 warm::kPidVar};
  return names;
}

void stop_warm_worker() {
  stop(python_kind().w);
  stop(cpp_kind().w);
}

}  // namespace autotune
