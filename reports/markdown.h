#pragma once
#include <string>

#include "reports/summary.h"

namespace autotune {

/// report.md: GitHub-flavoured Markdown — summary, the winner's stability checks, every config
/// measured (with why a config was rejected), time per step of baseline vs winner, how to apply.
std::string render_markdown(const RunSummary& s);

/// "12,345" — thousands separators for throughput columns.
std::string with_commas(double v);

}  // namespace autotune
