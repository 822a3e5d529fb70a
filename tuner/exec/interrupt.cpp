#include "tuner/exec/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cstring>

namespace autotune {

namespace {

std::atomic<int> g_signal{0};
std::atomic<int> g_boundary{0};  // SIGUSR1: stop at the next trial boundary

void on_boundary_signal(int sig) { g_boundary.store(sig); }
constexpr int kMaxGroups = 256;
std::atomic<int> g_child_groups[kMaxGroups];  // 0 = free; read by the handler (lock-free atomics only)

void on_signal(int sig) {
  int expected = 0;
  if (g_signal.compare_exchange_strong(expected, sig)) return;  // the first: the run stops at its next check
  // The second: stop now. Only async-signal-safe calls here.
  for (auto& g : g_child_groups)
    if (const int group = g.load(); group > 0) ::kill(-group, SIGKILL);
  static const char msg[] = "\nautotune: stopped at once (second signal); the journal holds the finished trials\n";
  (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
  ::_exit(128 + sig);
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking wait returns EINTR and sees the request
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  struct sigaction usr;
  std::memset(&usr, 0, sizeof usr);
  usr.sa_handler = on_boundary_signal;
  sigemptyset(&usr.sa_mask);
  usr.sa_flags = SA_RESTART;  // nothing waits on it: the trials in flight go on
  sigaction(SIGUSR1, &usr, nullptr);
}

int interrupt_signal() { return g_signal.load(); }
int stop_signal() {
  const int now = g_signal.load();
  return now ? now : g_boundary.load();
}
void clear_interrupt() {
  g_signal.store(0);
  g_boundary.store(0);
}
void add_child_group(int pgid) {
  for (auto& g : g_child_groups) {
    int expected = 0;
    if (g.compare_exchange_strong(expected, pgid)) return;
  }
}
void remove_child_group(int pgid) {
  for (auto& g : g_child_groups) {
    int expected = pgid;
    if (g.compare_exchange_strong(expected, 0)) return;
  }
}

Interrupted::Interrupted(int sig)
    : std::runtime_error(fmt::format("interrupted by SIG{}", sigabbrev_np(sig) ? sigabbrev_np(sig) : "?")), signal(sig) {}

}  // namespace autotune
