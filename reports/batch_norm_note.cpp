#include "reports/batch_norm_note.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

namespace autotune {

namespace {

/// The samples one forward of `r` sees on one rank: its batch_size knob, else the workload's default.
std::string forward_batch(const ConvergeRun& r, const WorkloadInfo& w) {
  return r.config.get("batch_size", std::to_string(w.default_batch_size));
}

}  // namespace

std::string batch_norm_note(const ConvergeSummary& s) {
  if (s.workload.batch_norms <= 0 || s.runs.empty()) return "";
  const ConvergeRun& base = s.runs.front();
  const std::string b0 = forward_batch(base, s.workload);
  std::vector<std::string> named;
  for (const ConvergeComparison& c : s.comparisons) {
    if (c.run < 0 || static_cast<std::size_t>(c.run) >= s.runs.size()) continue;
    const ConvergeRun& r = s.runs[static_cast<std::size_t>(c.run)];
    if (const std::string b = forward_batch(r, s.workload); b != b0) named.push_back(fmt::format("{} at {}", r.label, b));
  }
  if (named.empty()) return "";
  const std::string held =
      s.held_out.on()
          ? "The held-out loss (below) is evaluated in eval mode, on running statistics, the same way for every run: where "
            "the two losses disagree, it is the like-for-like comparison."
          : "A held-out loss is evaluated in eval mode, on running statistics, the same way for every run: give --val-data "
            "(the Python worker; --trainer python for a built-in workload) to time it as well.";
  return fmt::format(
      "{} has {} batch norm{}, which in training mode normalize each forward by its own batch's statistics. The training "
      "loss of a run whose forward sees another batch than the baseline's {} ({}) is read under other statistics: a larger "
      "forward batch can show a lower training loss at the same weights, and so look faster than it trains. {}",
      s.workload.name, s.workload.batch_norms, s.workload.batch_norms == 1 ? "" : "s", b0, fmt::join(named, "; "), held);
}

std::string micro_batch_note(const WorkloadInfo& w, std::int64_t user_batch, std::int64_t micro_batch) {
  if (micro_batch == user_batch || w.batch_norms == 0 || (w.batch_norms < 0 && !w.conv_model)) return "";
  const std::string which =
      w.batch_norms > 0 ? fmt::format("{} has {} batch norm{}", w.name, w.batch_norms, w.batch_norms == 1 ? "" : "s")
                        : fmt::format("{}'s batch norms were not counted (its worker does not say); if it has any", w.name);
  return fmt::format(
      "answer (a) trains your batch of {} as micro-batches of {}: the maths is the same except for batch norm ({}), whose "
      "statistics are computed per micro-batch (per rank with data parallel), so they change with it",
      user_batch, micro_batch, which);
}

}  // namespace autotune
