#include "tuner/exec/slots.h"

#include <fmt/format.h>
#include <sched.h>

#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "knobs/error.h"

namespace autotune {

std::vector<std::string> Slot::env() const {
  std::vector<std::string> e;
  if (const std::size_t n = cpus.empty() ? static_cast<std::size_t>(threads) : cpus.size(); n > 0) {
    // PyTorch sizes its intra-op pool by the machine's cores, not the affinity mask: capped to the slot.
    e.push_back(fmt::format("OMP_NUM_THREADS={}", n));
    e.push_back(fmt::format("MKL_NUM_THREADS={}", n));
  }
  if (!gpu.empty()) e.push_back("CUDA_VISIBLE_DEVICES=" + gpu);
  return e;
}

std::string Slot::describe() const {
  std::string s = fmt::format("slot {}: ", index);
  s += cpus.empty() ? "all CPUs" : fmt::format("CPU{} {}", cpus.size() > 1 ? "s" : "", cpu_list(cpus));
  if (!gpu.empty()) s += ", GPU " + gpu;
  return s;
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

std::string cpu_list(const std::vector<int>& cpus) {
  std::string s;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + (j > i ? fmt::format("{}-{}", cpus[i], cpus[j]) : std::to_string(cpus[i]));
    i = j + 1;
  }
  return s;
}

std::vector<int> parse_cpu_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) {
    const auto dash = part.find('-');
    std::size_t used = 0;
    const int a = std::stoi(part.substr(0, dash), &used);
    if (used != (dash == std::string::npos ? part.size() : dash)) throw std::invalid_argument("cpu list: " + s);
    int b = a;
    if (dash != std::string::npos) {
      b = std::stoi(part.substr(dash + 1), &used);
      if (used != part.size() - dash - 1 || b < a) throw std::invalid_argument("cpu list: " + s);
    }
    for (int c = a; c <= b; ++c) out.push_back(c);
  }
  return out;
}

std::vector<std::string> visible_gpus(int device_count) {
  std::vector<std::string> out;
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v && *v) {
    std::stringstream in(v);
    std::string part;
    while (std::getline(in, part, ',') && static_cast<int>(out.size()) < device_count)
      if (!part.empty()) out.push_back(part);
    if (!out.empty()) return out;
  }
  for (int i = 0; i < device_count; ++i) out.push_back(std::to_string(i));
  return out;
}

std::vector<Slot> plan_local_slots(int parallel, const std::vector<int>& cpus, const std::vector<std::string>& gpus, bool pin) {
  if (!pin && parallel >= 1 && (gpus.empty() || parallel <= static_cast<int>(gpus.size()))) {
    std::vector<Slot> out(static_cast<std::size_t>(parallel));
    for (int i = 0; i < parallel; ++i) {
      out[static_cast<std::size_t>(i)].index = i;
      if (!gpus.empty() && parallel > 1) out[static_cast<std::size_t>(i)].gpu = gpus[static_cast<std::size_t>(i)];
    }
    return out;
  }
  const int max_slots = gpus.empty() ? static_cast<int>(cpus.size()) : static_cast<int>(std::min(cpus.size(), gpus.size()));
  const std::string allowed = fmt::format("allowed: 1 to {} ({})", std::max(1, max_slots),
                                          gpus.empty() ? fmt::format("one slot per CPU of this tuner's {}: {}", cpus.size(), cpu_list(cpus))
                                                       : fmt::format("one slot per GPU: {} visible", gpus.size()));
  if (parallel < 1) throw UsageError(fmt::format("--parallel {}: a run needs at least one slot; {}", parallel, allowed));
  if (parallel == 1) return {Slot{}};
  if (!gpus.empty() && parallel > static_cast<int>(gpus.size()))
    throw UsageError(fmt::format("--parallel {}: more slots than devices (two trials would share a GPU); {}", parallel, allowed));
  if (parallel > static_cast<int>(cpus.size()))
    throw UsageError(fmt::format("--parallel {}: more slots than CPUs (two trials would share a core); {}, or --pin off to share "
                                 "the CPUs (trials that wait rather than compute)",
                                 parallel, allowed));
  std::vector<Slot> out;
  const std::size_t n = cpus.size(), k = static_cast<std::size_t>(parallel);
  for (std::size_t i = 0; i < k; ++i) {
    Slot s;
    s.index = static_cast<int>(i);
    for (std::size_t c = i * n / k; c < (i + 1) * n / k; ++c) s.cpus.push_back(cpus[c]);
    if (!gpus.empty()) s.gpu = gpus[i];
    out.push_back(s);
  }
  return out;
}

}  // namespace autotune
