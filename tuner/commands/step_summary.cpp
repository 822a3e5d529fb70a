// --summary of tune, report and check: the Markdown report appended to GitHub Actions' job summary.
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <stdexcept>

#include "reports/markdown.h"
#include "tuner/commands/command.h"

namespace autotune::cli {

void append_step_summary(const std::string& md, std::ostream& o) {
  const char* path = std::getenv("GITHUB_STEP_SUMMARY");
  if (!path || !*path) {
    o << "--summary: GITHUB_STEP_SUMMARY is not set (not a GitHub Actions step); nothing written\n";
    return;
  }
  std::FILE* f = std::fopen(path, "a");
  if (!f)
    throw std::runtime_error(fmt::format("--summary: cannot append to GITHUB_STEP_SUMMARY={}: {}", path, std::strerror(errno)));
  const bool ok = std::fwrite(md.data(), 1, md.size(), f) == md.size();
  if (std::fclose(f) != 0 || !ok) throw std::runtime_error(fmt::format("--summary: writing {} failed", path));
  o << fmt::format("job summary:    {} ({} bytes appended)\n", path, md.size());
}

void write_step_summary(const RunSummary& s, std::ostream& o) { append_step_summary(render_markdown(s, kStepSummaryLimit), o); }

}  // namespace autotune::cli
