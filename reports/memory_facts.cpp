#include "reports/memory_facts.h"

#include <fmt/format.h>

#include <cmath>

#include "knobs/memory.h"
#include "reports/run_facts.h"

namespace autotune {

namespace {

const ConfigSummary* measured(const RunSummary& s, const Config& c) {
  for (const auto& x : s.configs)
    if (x.config == c) return &x;
  return nullptr;
}

/// "425.3": an interval end in MiB beside format_bytes' unit-bearing peak.
std::string mib_figure(std::int64_t b) { return fmt::format("{:.1f}", static_cast<double>(b) / (1 << 20)); }

}  // namespace

std::string memory_cell(const RunSummary& s, const ConfigSummary& c) {
  if (!s.memory.on) return "";
  const MemoryEstimate* e = s.memory.find(c.config);
  const std::string meas = c.device_memory_peak >= 0 ? format_bytes(c.device_memory_peak) : "–";
  if (!e || !e->known) return "? → " + meas;
  return fmt::format("{} [{}, {}] → {}", format_bytes(e->peak), mib_figure(e->lo), mib_figure(e->hi), meas);
}

std::vector<MemoryRow> memory_rows(const RunSummary& s) {
  std::vector<MemoryRow> rows;
  if (!s.memory.on) return rows;
  for (const MemoryEstimate& e : s.memory.predicted) {
    MemoryRow r;
    r.config = changed_knobs(s, e.config);
    r.predicted = e.known ? fmt::format("{} [{}, {}] in {}", format_bytes(e.peak), mib_figure(e.lo), mib_figure(e.hi), e.phase)
                          : "unknown: " + e.why_unknown;
    if (e.known)
      r.breakdown = fmt::format("states {} + activations {} ({}/sample); optimizer step {} above the states",
                                format_bytes(e.states), format_bytes(e.activations), format_bytes(e.per_sample),
                                format_bytes(e.optimizer_transient));
    if (!e.reason.empty()) {
      r.measured = "not run";
      r.decision = "skipped: " + e.reason;
    } else if (const ConfigSummary* m = measured(s, e.config)) {
      if (m->status == TrialStatus::oom) r.measured = "out of memory";
      else if (m->device_memory_peak >= 0)
        r.measured = e.known && m->device_memory_peak > 0
                         ? fmt::format("{} ({:+.1f}%)", format_bytes(m->device_memory_peak),
                                       100.0 * static_cast<double>(e.peak - m->device_memory_peak) / m->device_memory_peak)
                         : format_bytes(m->device_memory_peak);
      else r.measured = "–";
      r.decision = "ran";
    } else {
      r.measured = "–";
      r.decision = "ran";
    }
    rows.push_back(r);
  }
  return rows;
}

std::vector<std::string> memory_notes(const RunSummary& s) {
  std::vector<std::string> out;
  if (!s.memory.on) return out;
  const MemoryReport& m = s.memory;
  out.push_back(fmt::format(
      "Each config's peak device memory was predicted before it ran (docs/memory.md): model states computed from the "
      "parameters, activations and the optimizer step fitted per family from {} probe trials ({:.1f} s) and every trial "
      "since. Capacity {} (--memory-cap); a config runs when its upper prediction is within {:.0f}% below it. {} of {} "
      "configs were skipped without running.",
      m.probes, m.probe_seconds, format_bytes(m.capacity), 100 * m.margin, m.skipped(), m.predicted.size()));
  for (const auto& c : m.states_checks) out.push_back("Model states " + c + " (computed from the parameter sizes vs counted from the tensors).");
  if (m.misses.empty()) out.push_back("No misses: no trial the model said fits ran out of memory or peaked above its interval.");
  for (const auto& x : m.misses) out.push_back("Miss: " + x + "; the fit counts it from then on.");
  if (!m.advice.empty()) out.push_back(m.advice);
  return out;
}

}  // namespace autotune
