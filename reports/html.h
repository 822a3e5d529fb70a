#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "reports/markup.h"
#include "reports/summary.h"

namespace autotune {

/// report.html: one self-contained file that works offline — Chart.js (Debian's libjs-chart.js) is
/// inlined, the run's data sits in a JSON block, and a Content-Security-Policy forbids every network
/// fetch. Charts: throughput per trial, knob effects, time per 1,000 samples (baseline vs winner),
/// peak memory vs batch size, loss curves. Every user-derived string is escaped; when Chart.js cannot
/// be found the report still renders its tables and says why the charts are missing.
std::string render_html(const RunSummary& s);

/// Where Chart.js is read from: $AUTOTUNE_CHARTJS when set, else Debian's
/// /usr/share/javascript/chart.js/chart.min.js.
std::string chartjs_path();

/// html_escape, with the spans marked \x01…\x02 (the reports' sentences mark configs so) as <code>.
std::string html_with_code(const std::string& text);
/// JSON for a <script type="application/json"> block: no string in it can close the element.
std::string script_safe_json(const nlohmann::json& j);

/// Breakdown as milliseconds per 1,000 samples (a step processes batch_size × grad_accum samples),
/// so configs with different batch sizes compare.
struct PhaseTimes {
  double data = 0, h2d = 0, forward = 0, backward = 0, optimizer = 0, other = 0;
  double total() const { return data + h2d + forward + backward + optimizer + other; }
};
PhaseTimes per_1k_samples(const ConfigSummary& c);

}  // namespace autotune
