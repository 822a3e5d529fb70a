#pragma once
// One interface for every output format, and the fan-out that writes them all into a run folder.
#include <memory>
#include <string>
#include <vector>

#include "reports/summary.h"

namespace autotune {

/// A report format: one file in the run folder, rendered from the summary alone.
class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual std::string file_name() const = 0;  ///< e.g. "report.md"
  virtual std::string render(const RunSummary& s) const = 0;
};

/// best.json, report.md, report.html, results.json, junit.xml.
std::vector<std::unique_ptr<Reporter>> all_reporters();

/// Renders every format and writes each atomically into `dir`; returns the paths written.
std::vector<std::string> write_reports(const RunSummary& s, const std::string& dir);

}  // namespace autotune
