#include "reports/memory_study.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "knobs/numbers.h"
#include "reports/markdown.h"

namespace autotune {

namespace {

std::string pct(double x) { return fmt::format("{:+.1f}%", 100 * x); }

std::string row_text(const MemoryStudyRow& r) {
  std::string line =
      r.known ? fmt::format("  {:>7}  {:>30}  {:<16}  {:<4}", r.batch,
                            fmt::format("{} [{}, {}]", format_bytes(r.predicted), format_bytes(r.lo), format_bytes(r.hi)), r.phase,
                            r.fits ? "yes" : "no")
              : fmt::format("  {:>7}  {:>30}  {:<16}  {:<4}", r.batch, "unknown", "", "?");
  if (r.checked) {
    if (r.measured && r.error)
      line += fmt::format("  {:<13}  {}{}", format_bytes(*r.measured), pct(*r.error), r.probed ? " (probed)" : "");
    else if (r.measured)
      line += fmt::format("  {}", format_bytes(*r.measured));
    else
      line += fmt::format("  {}{}", r.status == "oom" ? "out of memory" : r.status,
                          r.status == "oom" && r.known && r.fits ? "  MISS: predicted to fit" : "");
  }
  if (!r.known) line += "  (" + r.why_unknown + ")";
  return line + "\n";
}

nlohmann::json row_json(const MemoryStudyRow& r) {
  nlohmann::json row = {{"batch", r.batch}, {"known", r.known}, {"held_out", !r.probed}};
  if (r.known) {
    row["predicted"] = r.predicted;
    row["lo"] = r.lo;
    row["hi"] = r.hi;
    row["phase"] = r.phase;
    row["fits"] = r.fits;
  } else {
    row["why_unknown"] = r.why_unknown;
  }
  if (r.checked) row["status"] = r.status;
  if (r.measured) row["measured"] = *r.measured;
  if (r.error) row["error"] = *r.error;
  return row;
}

}  // namespace

std::string memory_study_header(const MemoryStudy& s) {
  return fmt::format("memory model of {} on {} ({}; margin {:.0f}%)\n", s.workload, s.cuda ? "cuda" : "cpu",
                     !s.capped ? "the device's own memory"
                               : fmt::format("--memory-cap {}{}", format_bytes(s.capacity),
                                             s.cuda ? ", the caching allocator's memory fraction"
                                                    : ": a counting CPU allocator emulates a device of that size"),
                     100 * s.margin);
}

std::string memory_study_family_text(const MemoryStudyFamily& f, bool check) {
  std::string o = fmt::format("\nfamily {}: {} probe{} at batch {} ({:.1f} s)\n", f.family, f.probes, f.probes == 1 ? "" : "s",
                              fmt::format("{}", fmt::join(f.probe_batches, ", ")), f.probe_seconds);
  if (!f.why_unknown.empty()) return o + "  not predicted: " + f.why_unknown + "\n";
  for (const auto& sc : f.states)
    o += fmt::format("  model states  {} computed, {} counted from the tensors{} (params {}, grads {}, AdamW state {}{})\n",
                     format_bytes(sc.analytic), format_bytes(sc.counted), sc.analytic == sc.counted ? " — equal" : " — DIFFERENT",
                     format_bytes(sc.parts.params), format_bytes(sc.parts.grads), format_bytes(sc.parts.optimizer),
                     sc.parts.buckets ? ", DDP buckets " + format_bytes(sc.parts.buckets) : "");
  if (f.fitted)
    o += fmt::format("  activations   {} + {} per sample (forward+backward, above the states); optimizer step {} above the "
                     "states; fit over {} points, largest miss {:.2f}%\n",
                     format_bytes(f.activations_intercept), format_bytes(f.per_sample), format_bytes(f.optimizer_transient),
                     f.points, 100 * f.fit_error);
  o += fmt::format("  {:>7}  {:>30}  {:<16}  {:<4}{}\n", "batch", "predicted peak [interval]", "peak in", "fits",
                   check ? "  measured       error" : "");
  for (const auto& r : f.rows) o += row_text(r);
  if (f.largest_fit_pow2 > 0)
    o += fmt::format("  largest batch predicted to fit: {} (power of two: {})\n", with_commas(static_cast<double>(f.largest_fit)),
                     f.largest_fit_pow2);
  else if (f.largest_fit_pow2 == 0)
    o += "  " + (f.advice.empty() ? std::string("no batch is predicted to fit") : f.advice) + "\n";
  return o;
}

std::string memory_study_footer(const MemoryStudy& s) {
  std::string o;
  for (const auto& m : s.misses) o += "miss: " + m + "\n";
  if (s.held_out)
    o += fmt::format("\nheld-out batches (not probed): {} measured, median |error| {:.2f}%, max {:.2f}%; largest under-prediction "
                     "beyond the interval {:.2f}% (margin {:.0f}%)\n",
                     s.held_out->n, 100 * s.held_out->median_abs_error, 100 * s.held_out->max_abs_error,
                     100 * s.held_out->worst_under, 100 * s.margin);
  return o;
}

nlohmann::json memory_study_json(const MemoryStudy& s) {
  nlohmann::json out = {{"workload", s.workload}, {"device", s.cuda ? "cuda" : "cpu"}, {"margin", s.margin},
                        {"families", nlohmann::json::array()}};
  for (const auto& f : s.families) {
    nlohmann::json fam = {{"family", f.family}, {"probes", f.probe_batches}, {"probe_seconds", f.probe_seconds},
                          {"rows", nlohmann::json::array()}};
    if (!f.why_unknown.empty()) {
      fam["why_unknown"] = f.why_unknown;
      out["families"].push_back(fam);
      continue;
    }
    if (!f.states.empty()) {
      fam["states_analytic"] = f.states.back().analytic;
      fam["states_counted"] = f.states.back().counted;
    }
    if (f.fitted) {
      fam["per_sample"] = f.per_sample;
      fam["activations_intercept"] = f.activations_intercept;
      fam["optimizer_transient"] = f.optimizer_transient;
      fam["fit_error"] = f.fit_error;
    }
    for (const auto& r : f.rows) fam["rows"].push_back(row_json(r));
    fam["largest_fit"] = f.largest_fit;
    fam["largest_fit_pow2"] = f.largest_fit_pow2;
    if (f.largest_fit_pow2 == 0) fam["advice"] = f.advice;
    out["families"].push_back(fam);
  }
  if (s.held_out)
    out["held_out"] = {{"n", s.held_out->n},
                       {"median_abs_error", s.held_out->median_abs_error},
                       {"max_abs_error", s.held_out->max_abs_error},
                       {"worst_under", s.held_out->worst_under}};
  out["capacity"] = s.capacity;
  out["trials"] = s.trials;
  return out;
}

}  // namespace autotune
