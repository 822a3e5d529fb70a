#pragma once
// The memory model's part of a report (runs with --memory-cap; docs/memory.md), once for every format:
// each config's predicted peak against what it measured, the configs skipped without running, the
// model's misses and what to do when nothing fits.
#include <string>
#include <vector>

#include "reports/summary.h"

namespace autotune {

/// The All-trials cell: "47.3 MiB [46.8, 47.8] → 47.3 MiB" (predicted [interval] → measured); "" when the run had no model.
std::string memory_cell(const RunSummary& s, const ConfigSummary& c);

/// One row per config the model decided on: run (predicted vs measured) or skipped (with the reason).
struct MemoryRow {
  std::string config;     ///< the change from the baseline
  std::string predicted;  ///< "71.0 MiB [66.1, 74.2] in forward+backward", or "unknown: why"
  std::string measured;   ///< "47.3 MiB (+0.0%)", "out of memory", "not run"
  std::string breakdown;  ///< "states 24.2 MiB + activations 46.8 MiB (14.0 KiB/sample)"
  std::string decision;   ///< "ran" | "skipped: …"
};
std::vector<MemoryRow> memory_rows(const RunSummary& s);

/// Sentences above the table: capacity and margin, probes, model states computed vs counted, misses, advice.
std::vector<std::string> memory_notes(const RunSummary& s);

}  // namespace autotune
