#include "knobs/host_load.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

namespace autotune {

namespace {

double seconds_of(const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; }

}  // namespace

CpuReading read_cpus() {
  CpuReading r;
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) == 0) r.own_seconds = seconds_of(u.ru_utime) + seconds_of(u.ru_stime);
  cpu_set_t set;
  CPU_ZERO(&set);
  const bool have_mask = sched_getaffinity(0, sizeof(set), &set) == 0;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  std::ifstream in("/proc/stat");
  if (!in || tick <= 0) return r;
  std::string line;
  while (std::getline(in, line)) {
    // "cpuN user nice system idle iowait irq softirq steal guest guest_nice" (guest time is inside user)
    if (line.rfind("cpu", 0) != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream f(line.substr(3));
    int cpu = -1;
    long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    f >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    if (!f && !f.eof()) continue;
    if (cpu < 0 || (have_mask && (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &set)))) continue;
    r.busy_seconds += static_cast<double>(user + nice + system + irq + softirq + steal) / tick;
    r.steal_seconds += static_cast<double>(steal) / tick;
    ++r.cpus;
  }
  return r;
}

std::optional<HostLoad> host_load_between(const CpuReading& before, const CpuReading& after) {
  const double wall = after.wall_seconds - before.wall_seconds;
  if (before.cpus == 0 || after.cpus != before.cpus || !(wall > 0)) return std::nullopt;
  HostLoad h;
  h.cpus = after.cpus;
  h.seconds = wall;
  const double others = (after.busy_seconds - before.busy_seconds) - (after.own_seconds - before.own_seconds);
  h.other_cores = others > 0 ? others / wall : 0;
  const double steal = after.steal_seconds - before.steal_seconds;
  h.steal_cores = steal > 0 ? std::min(steal / wall, h.other_cores) : 0;
  return h;
}

}  // namespace autotune
