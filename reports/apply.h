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

}  // namespace autotune
