#include "workloads/warm_server.h"

#include <ATen/Parallel.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "knobs/warm_protocol.h"

namespace autotune {

namespace {

bool g_forked = false;
int g_wake_w = -1;
volatile std::sig_atomic_t g_stopping = 0;

void wake(int) {
  const char b = 1;
  [[maybe_unused]] const ssize_t n = ::write(g_wake_w, &b, 1);
}

void stop(int s) {
  g_stopping = 1;
  wake(s);
}

/// Threads in this process: a fork copies only the calling one, so a server that runs any other serves nobody.
int threads() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') ++n;
    ::closedir(d);
  }
  return n;
}

/// Whether the CUDA driver was initialised in this process (cuInit; the runtime calls it on the first CUDA call): a
/// child forked after that could not use the GPU, so such a server forks nothing. Nothing in the server calls CUDA;
/// this is the guard. Loaded is not initialised: on a host with a driver, libcuda.so is mapped before `main` in any
/// program linked to LibTorch's CUDA libraries (the H200 lease of 2026-11-30: mapped at `main`, one thread), so the
/// driver is asked, without initialising it: cuDeviceGetCount answers CUDA_ERROR_NOT_INITIALIZED until cuInit ran.
bool cuda_driver_initialised() {
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);  // a handle only if it is already loaded
  if (!driver) return false;
  constexpr int kNotInitialized = 3;  // CUDA_ERROR_NOT_INITIALIZED (cuda.h)
  using DeviceGetCount = int (*)(int*);
  const auto count = reinterpret_cast<DeviceGetCount>(::dlsym(driver, "cuDeviceGetCount"));
  int n = 0;
  const bool initialised = !count || count(&n) != kNotInitialized;  // a driver it cannot ask: assume the worst
  ::dlclose(driver);
  return initialised;
}

/// In the fork: become the command and run it; never returns.
[[noreturn]] void child(const warm::Request& r, const int fds[3], const std::vector<int>& others, const std::string& exe,
                        const std::function<int(int, char**)>& cli) {
  int code = 1;
  try {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (int s : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD, SIGPIPE}) std::signal(s, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int fd : others) ::close(fd);
    for (int i = 0; i < 3; ++i) {
      ::dup2(fds[i], i);
      ::close(fds[i]);
    }
    if (::chdir(r.cwd.c_str()) != 0) throw std::runtime_error("cannot enter " + r.cwd);
    ::clearenv();
    for (const auto& [k, v] : r.env) ::setenv(k.c_str(), v.c_str(), 1);
    if (!r.cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (int c : r.cpus) CPU_SET(c, &set);
      ::sched_setaffinity(0, sizeof set, &set);
    }
    // OpenMP read OMP_NUM_THREADS when the server loaded it: the command's own count is applied here.
    if (const char* n = std::getenv("OMP_NUM_THREADS"); n && std::atoi(n) > 0) at::set_num_threads(std::atoi(n));
    g_forked = true;
    std::vector<std::string> args = {exe};
    args.insert(args.end(), r.argv.begin(), r.argv.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    code = cli(static_cast<int>(args.size()), argv.data());
  } catch (const std::exception& e) {
    std::cerr << "autotune-worker: error: " << e.what() << "\n";
    code = 1;
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ::_exit(code);
}

/// The serving loop's state: the listening socket, the wake-up pipe and each running child's client connection.
struct Server {
  int listener = -1, wake_r = -1;
  std::string path;
  warm::Request mine;  ///< this server's side of a request: what a request must match to be forked
  std::map<pid_t, int> running;  ///< child → its client's connection (-1 once that client is gone)

  void refuse(int conn, const int fds[3], const std::string& why) {
    for (int i = 0; i < 3; ++i)
      if (fds[i] >= 0) ::close(fds[i]);
    warm::send_line(conn, nlohmann::json{{"cold", why}}.dump());
    ::close(conn);
  }

  void accept_one(const std::string& exe, const std::function<int(int, char**)>& cli) {
    const int conn = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) return;
    int fds[3] = {-1, -1, -1};
    const auto request = warm::receive_request(conn, fds);
    std::string why = request ? warm::refusal(*request, mine) : "a malformed request";
    if (const int n = threads(); why.empty() && n > 1) why = "the warm worker runs " + std::to_string(n) + " threads";
    if (why.empty() && cuda_driver_initialised()) why = "CUDA was initialised in the warm worker";
    if (!why.empty()) return refuse(conn, fds, why);
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) return refuse(conn, fds, std::string("fork failed: ") + std::strerror(errno));
    if (pid == 0) {
      std::vector<int> others = {listener, wake_r, g_wake_w, conn};
      for (const auto& [p, c] : running)
        if (c >= 0) others.push_back(c);
      child(*request, fds, others, exe, cli);
    }
    for (int fd : fds) ::close(fd);
    running[pid] = conn;
    warm::send_line(conn, nlohmann::json{{"pid", pid}}.dump());
  }

  /// Each child that ended: its end (exit code or signal) to its client.
  void reap() {
    int status = 0;
    pid_t pid;
    while (!running.empty() && (pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      auto it = running.find(pid);
      if (it == running.end()) continue;
      if (it->second >= 0) {
        const nlohmann::json end = WIFSIGNALED(status) ? nlohmann::json{{"signal", WTERMSIG(status)}}
                                                       : nlohmann::json{{"exit", WEXITSTATUS(status)}};
        warm::send_line(it->second, end.dump());
        ::close(it->second);
      }
      running.erase(it);
    }
  }

  /// A client whose connection closed (SIGKILLed by the tuner's timeout): its command goes with it.
  void drop_gone(const std::vector<pollfd>& polled) {
    for (const auto& p : polled)
      if (p.fd != listener && p.fd != wake_r && (p.revents & (POLLIN | POLLHUP | POLLERR)))
        for (auto& [pid, c] : running)
          if (c == p.fd) {
            ::kill(-pid, SIGKILL);
            ::close(c);
            c = -1;
          }
  }

  void close_all() {
    for (const auto& [pid, c] : running) ::kill(-pid, SIGKILL);
    ::unlink(path.c_str());
  }
};

/// Binds PATH.PID and renames it to PATH: the socket appears only once the server is ready. -1 when it cannot.
int listen_at(const std::string& path) {
  const std::string tmp = path + "." + std::to_string(::getpid());
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (tmp.size() >= sizeof addr.sun_path) return -1;
  std::strcpy(addr.sun_path, tmp.c_str());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0 ||
      ::rename(tmp.c_str(), path.c_str()) != 0) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    return -1;
  }
  return fd;
}

}  // namespace

bool started_forked() { return g_forked; }

int serve(const std::string& socket_path, pid_t parent, const std::string& exe,
          const std::function<int(int, char**)>& cli) {
  if (::getppid() != parent) return 0;  // the tuner died while this loaded: nobody to serve
  Server s;
  s.path = socket_path;
  s.mine = warm::this_process(exe, {});
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) return 1;
  s.wake_r = pipe_fds[0];
  g_wake_w = pipe_fds[1];
  std::signal(SIGCHLD, wake);
  std::signal(SIGTERM, stop);
  std::signal(SIGINT, SIG_IGN);  // a terminal's Ctrl-C is the tuner's to handle
  s.listener = listen_at(socket_path);
  if (s.listener < 0) {
    std::cerr << "autotune-worker serve: cannot listen at " << socket_path << "\n";
    return 1;
  }
  while (!g_stopping && ::getppid() == parent) {
    std::vector<pollfd> polled = {{s.listener, POLLIN, 0}, {s.wake_r, POLLIN, 0}};
    for (const auto& [pid, c] : s.running)
      if (c >= 0) polled.push_back({c, POLLIN, 0});
    if (::poll(polled.data(), polled.size(), 500) < 0 && errno != EINTR) break;
    char drain[64];
    while (::read(s.wake_r, drain, sizeof drain) > 0) {
    }
    s.drop_gone(polled);
    s.reap();
    if (polled[0].revents & POLLIN) s.accept_one(exe, cli);
  }
  s.close_all();
  return 0;
}

}  // namespace autotune
