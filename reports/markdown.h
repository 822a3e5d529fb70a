#pragma once
#include <cstddef>
#include <string>

#include "reports/summary.h"

namespace autotune {

/// report.md: GitHub-flavoured Markdown — summary, the winner's stability checks, every config
/// measured (with why a config was rejected), time per step of baseline vs winner, how to apply.
/// `max_bytes` > 0: halve the all-configs table (winner and baseline rows kept) until the text fits,
/// saying how many rows were left out (GitHub job summaries take at most 1 MiB).
std::string render_markdown(const RunSummary& s, std::size_t max_bytes = 0);

/// "425 MiB (1.8%)": a config's peak memory and its share of the device (GPU) or host (CPU) memory.
std::string peak_share(const ConfigSummary& c);
/// A Markdown table cell / text run: `|` and newlines would break the table; a '<' that would open a tag and a '&' that
/// would start an entity get a backslash, so a user-derived string (a workload named "<script>…") renders as text,
/// never as HTML, and the raw file carries no HTML entities ("6.2% > 5%" stays as it is).
std::string md_cell(const std::string& s);
/// A code span: shown literally by GitHub (no HTML inside), so only the table breakers are replaced.
std::string md_code(const std::string& s);

}  // namespace autotune
