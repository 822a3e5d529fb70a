#include "tuner/search/quiet_host.h"

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "knobs/host_load.h"

namespace autotune {

QuietWait wait_for_quiet_host(const StabilityOptions& o, double max_seconds,
                              const std::function<void(const std::string&)>& note) {
  QuietWait w;
  const auto start = std::chrono::steady_clock::now();
  bool announced = false;
  for (;;) {
    const CpuReading before = read_cpus();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const auto load = host_load_between(before, read_cpus());
    w.waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!load) {  // nothing to read: the worker records nothing either
      w.quiet = true;
      return w;
    }
    w.other_cores = load->other_cores;
    w.cpus = load->cpus;
    if (!host_busy(*load, o)) {
      w.quiet = true;
      if (announced) note(fmt::format("the host is quiet again after {:.0f} s (others use {:.2f} of {} CPUs)", w.waited, w.other_cores, w.cpus));
      return w;
    }
    if (!announced) {
      note(fmt::format("waiting up to {:.0f} s for a quiet host before timing it again: others use {:.2f} of {} CPUs", max_seconds,
                       w.other_cores, w.cpus));
      announced = true;
    }
    if (w.waited + 1 > max_seconds) {
      note(fmt::format("the host stayed busy for {:.0f} s (others use {:.2f} of {} CPUs)", w.waited,
                       w.other_cores, w.cpus));
      return w;
    }
  }
}

}  // namespace autotune
