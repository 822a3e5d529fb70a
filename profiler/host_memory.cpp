#include "profiler/host_memory.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>

namespace autotune {

namespace {
/// Reads "Key:   1234 kB" from a /proc file; -1 when absent.
std::int64_t proc_kb(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1)) * 1024;
  }
  return -1;
}
}  // namespace

std::int64_t peak_rss_bytes() {
  const std::int64_t hwm = proc_kb("/proc/self/status", "VmHWM");
  if (hwm >= 0) return hwm;
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::int64_t>(ru.ru_maxrss) * 1024;  // Linux: kilobytes
}

std::int64_t host_total_bytes() {
  const std::int64_t t = proc_kb("/proc/meminfo", "MemTotal");
  if (t >= 0) return t;
  return static_cast<std::int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto c = line.find(':');
      if (c != std::string::npos) return line.substr(line.find_first_not_of(" \t", c + 1));
    }
  }
  return "";
}

std::int64_t minor_page_faults() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::int64_t>(ru.ru_minflt);
}

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max<int>(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
}

}  // namespace autotune
