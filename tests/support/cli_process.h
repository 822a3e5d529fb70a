#pragma once
// A command started as a user starts it — its own process, main()'s signal handlers, stdout and stderr
// in files — so tests can interrupt it, wait for it with a deadline and look for processes it left.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "knobs/proc_file.h"

namespace autotune::testing {

/// Starts `args` (args[0] is the binary's path) with stdout/stderr to the given files; returns its pid.
inline pid_t start_process(std::vector<std::string> args, const std::string& out_path, const std::string& err_path) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (!std::freopen(out_path.c_str(), "w", stdout) || !std::freopen(err_path.c_str(), "w", stderr)) _exit(126);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

/// Waits up to `seconds` for `pid`: its exit status (128 + signal when killed), or -1 when it was still
/// running (it is then killed).
inline int wait_exit(pid_t pid, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int st = 0;
  while (std::chrono::steady_clock::now() < end) {
    if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
  return -1;
}

/// Processes other than this one whose command line mentions `needle` (a run folder is in every
/// worker's --plan path).
inline int processes_mentioning(const std::string& needle) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos || name == std::to_string(getpid())) continue;
    // A process that exits as this looks has gone, so it mentions nothing (knobs/proc_file.h: a kill -9 test's
    // workers are exiting as it looks).
    const std::optional<std::string> cmd = read_proc_file((e.path() / "cmdline").string());
    if (cmd && cmd->find(needle) != std::string::npos) ++n;
  }
  return n;
}

/// The whole file ("" when it is missing).
inline std::string slurp(const std::string& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace autotune::testing
