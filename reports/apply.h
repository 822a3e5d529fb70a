#pragma once
#include <string>
#include <vector>

#include "knobs/config.h"

namespace autotune {

/// How to reproduce a config in the user's own training loop: LibTorch calls and the equivalent
/// PyTorch Python, one snippet line (or short block) per knob that differs from its baseline.
struct ApplySnippets {
  std::vector<std::string> cpp, python;
};

/// `device` is "cuda" or "cpu" (what autocast and the snippets name); `workload_defaults` resolves
/// knobs whose baseline is the workload's own (batch_size).
ApplySnippets apply_snippets(const Config& winner, const std::string& device,
                             const std::map<std::string, std::string>& workload_defaults);

/// The host-heap policy every trial ran with (ConfigSummary::host_malloc), for the user's own program:
/// mallopt calls for C++, environment variables for Python. Empty unless the policy was applied
/// (`host_malloc` is host_heap::kApplied): an older worker's or a refused policy gives nothing to copy.
ApplySnippets heap_snippets(const std::string& host_malloc);
/// The sentence that introduces heap_snippets in a report (plain text; `faults_per_step` < 0: not measured).
std::string heap_note(const std::string& host_malloc, double faults_per_step);

}  // namespace autotune
