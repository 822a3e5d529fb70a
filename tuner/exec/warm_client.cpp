#include "tuner/exec/warm_client.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "knobs/proc_file.h"
#include "knobs/warm_protocol.h"

namespace autotune {

namespace {

volatile pid_t g_child = -1;

void forward(int sig) {
  if (g_child > 0) ::kill(g_child, sig);
}

constexpr int kForwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

/// Whether `pid` runs: a server that exited stays a zombie until the tuner reaps it, and a zombie answers kill(pid, 0).
bool running(pid_t pid) {
  const std::optional<std::string> text = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  if (!text) return false;  // gone (knobs/proc_file.h)
  const auto close = text->rfind(')');
  return close != std::string::npos && close + 2 < text->size() && (*text)[close + 2] != 'Z' && (*text)[close + 2] != 'X';
}

/// A connection to the server at `path`, waiting while it is still loading (its socket appears when it is ready);
/// -1 when it is gone or never became ready.
int connect_to(const std::string& path, pid_t server) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return -1;
  std::strcpy(addr.sun_path, path.c_str());
  while (true) {
    const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s >= 0 && ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return s;
    if (s >= 0) ::close(s);
    if (server <= 0 || std::chrono::steady_clock::now() > deadline || !running(server)) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

/// The command as a fresh process: this one becomes the worker.
[[noreturn]] void run_cold(int argc, char** argv) {
  ::unsetenv(warm::kSocketVar);
  ::unsetenv(warm::kPidVar);
  std::vector<char*> args(argv, argv + argc);
  args.push_back(nullptr);
  ::execv(argv[0], args.data());
  std::cerr << "autotune: cannot start " << argv[0] << ": " << std::strerror(errno) << "\n";
  std::_Exit(127);
}

}  // namespace

int warm_client_main(int argc, char** argv) {
  if (argc < 1) return 2;
  const char* sock = std::getenv(warm::kSocketVar);
  const char* pid_text = std::getenv(warm::kPidVar);
  const int s = sock && pid_text ? connect_to(sock, static_cast<pid_t>(std::atoi(pid_text))) : -1;
  if (s < 0) run_cold(argc, argv);
  std::error_code ec;
  const auto exe = std::filesystem::canonical(argv[0], ec);
  const auto request = warm::this_process(ec ? std::string(argv[0]) : exe.string(), {argv + 1, argv + argc});
  std::string buffer;
  std::optional<std::string> first;
  if (warm::send_request(s, request)) first = warm::read_line(s, buffer);
  nlohmann::json msg = first ? nlohmann::json::parse(*first, nullptr, false) : nlohmann::json();
  if (!msg.is_object() || !msg.contains("pid")) {
    if (const char* v = std::getenv("AUTOTUNE_VERBOSE"); v && std::string(v) == "1")
      std::cerr << "autotune-worker: started cold: "
                << (msg.is_object() && msg.contains("cold") ? msg["cold"].get<std::string>() : "the warm worker went away")
                << "\n";
    ::close(s);
    run_cold(argc, argv);
  }
  g_child = msg["pid"].get<pid_t>();
  for (int sig : kForwarded) std::signal(sig, forward);
  const auto end_line = warm::read_line(s, buffer);
  const nlohmann::json end = end_line ? nlohmann::json::parse(*end_line, nullptr, false) : nlohmann::json();
  if (!end.is_object()) {  // the server died: its children die with it
    std::cerr << "autotune-worker: the warm worker that ran this command stopped before it finished\n";
    return 70;
  }
  if (end.contains("signal")) {
    const int sig = end["signal"].get<int>();
    for (int f : kForwarded) std::signal(f, SIG_DFL);
    std::signal(sig, SIG_DFL);
    ::kill(::getpid(), sig);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    return 128 + sig;
  }
  return end.value("exit", 1);
}

}  // namespace autotune
