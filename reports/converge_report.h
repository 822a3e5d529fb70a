#pragma once
// The outputs of `autotune converge` (reports/converge_summary.h): converge.md, converge.html (the loss
// curves against wall time and against samples, Chart.js inlined, offline) and converge.json.
#include <nlohmann/json.hpp>

#include <string>

#include "reports/converge_summary.h"

namespace autotune {

std::string render_converge_markdown(const ConvergeSummary& s);
std::string render_converge_html(const ConvergeSummary& s);
/// Every figure, each run's full curve included (docs/outputs.md, "converge.json").
nlohmann::json render_converge_json(const ConvergeSummary& s);

/// One line per comparison: "`batch_size=256` (the pick) reached loss 2.31 in 41.0 s, the baseline in 58.3 s:
/// measured 1.42× …; predicted 1.36× (…): within 4%". Plain text; `code` wraps a config.
std::string comparison_sentence(const ConvergeSummary& s, const ConvergeComparison& c,
                                const std::function<std::string(const std::string&)>& code);

}  // namespace autotune
