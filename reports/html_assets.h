#pragma once
// What report.html carries besides the run: its style sheet, its own script (draws the charts from the
// page's JSON data block, then records on each canvas how many pixels it painted — what the browser
// test reads), and Chart.js read from disk to be inlined.
#include <string>

namespace autotune {

extern const char* const kReportStyle;
/// report.html's script (its charts from the page's data block).
std::string report_script();
/// converge.html's script.
std::string converge_script();

/// Chart.js's text, safe to inline in a <script> element; "" with `why_missing` set when it cannot be read.
std::string read_chartjs(std::string& why_missing);

}  // namespace autotune
