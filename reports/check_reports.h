#pragma once
// What `autotune check` writes into its folder, each rendered from the CheckSummary alone:
//   check.json          the whole check (autotune.check/1; a later check can reuse its candidate side)
//   check.md            the verdict, each metric's numbers, both sides, every repetition (GitHub Markdown)
//   check.html          the same with both sides' distributions drawn (inline SVG: offline, no scripts)
//   junit.xml           a testcase per metric × config: failure = regression, skipped = inconclusive,
//                       error = a side failed
//   results.json        Google Benchmark's schema, one entry per repetition of each side + aggregates
//   gab-throughput.json, gab-memory.json   github-action-benchmark's customBiggerIsBetter /
//                       customSmallerIsBetter input (the candidate's numbers)
//   bmf.json            Bencher Metric Format (the candidate's numbers with their 95% CI)
#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "reports/check_summary.h"

namespace autotune {

/// check.md; `max_bytes` > 0 drops the per-repetition tables until it fits (GitHub job summaries: 1 MiB).
std::string render_check_markdown(const CheckSummary& s, std::size_t max_bytes = 0);
std::string render_check_html(const CheckSummary& s);
std::string render_check_junit(const CheckSummary& s);
nlohmann::json render_check_gbench(const CheckSummary& s);
/// `higher_is_better`: the throughput file (customBiggerIsBetter), else the memory one.
nlohmann::json render_check_gab(const CheckSummary& s, bool higher_is_better);
nlohmann::json render_check_bmf(const CheckSummary& s);

/// GitHub Actions workflow commands (`::error title=…::…`, `::warning …`) for a regression, an
/// inconclusive check or a failed side; none for a pass.
std::vector<std::string> github_annotations(const CheckSummary& s);

/// Writes every file above into `dir` (each through a temporary file and a rename); returns the paths.
std::vector<std::string> write_check_reports(const CheckSummary& s, const std::string& dir);

/// "mlp batch_size=64": what a check measured, for names in the machine-readable outputs.
std::string check_name(const CheckSummary& s);

}  // namespace autotune
