#include "reports/run_facts.h"

#include <fmt/format.h>

#include "reports/markdown.h"

namespace autotune {

std::string model_sentence(const WorkloadInfo& w) {
  if (w.source.empty()) return "";
  std::string s = w.source;
  if (!w.batch_spec.empty()) s += "; batch: " + w.batch_spec;
  if (w.flops_per_sample > 0)
    s += fmt::format("; {:.3g} FLOP/sample ({})", w.flops_per_sample, w.flops_basis.empty() ? "declared" : w.flops_basis);
  return s;
}

std::string data_sentence(const DataStats& d) {
  if (d.source.empty()) return "";
  if (d.decode == "tokens")
    return fmt::format("{} (token file): {} tokens", d.source, with_commas(static_cast<double>(d.dataset_size)));
  std::string s =
      fmt::format("{} ({}, decode {}): {} images; the winner's measured trial read {}, skipped {}", d.source,
                  d.decode == "cache" ? "pre-decoded cache" : "image folder", d.decode,
                  with_commas(static_cast<double>(d.dataset_size)), with_commas(static_cast<double>(d.images_ok)), d.images_bad);
  if (d.images_bad > 0) {
    std::string reasons;
    for (const auto& [k, v] : d.bad_by_reason) reasons += fmt::format("{}{} {}", reasons.empty() ? "" : ", ", k, v);
    s += " (" + reasons + (d.bad_example.empty() ? "" : "; e.g. " + d.bad_example) + ")";
  }
  return s;
}

bool speedup_not_significant(const RunSummary& s) { return s.speedup > 0 && s.speedup_lo <= 1.0 && s.winner != s.baseline; }

std::string speedup_caveat(const RunSummary& s) {
  if (!speedup_not_significant(s)) return "";
  return fmt::format(
      "not significant at 95%: the interval reaches {:.2f}×, so these runs cannot tell the winner from the baseline on this "
      "machine; more windows (--windows) or a quieter machine narrow it",
      s.speedup_lo);
}

std::string noise_sentence(const RunSummary& s) {
  const NoiseCalibration& n = s.noise;
  if (!n.calibrating || n.trials < n.trials_needed) return "";
  std::string t = fmt::format(
      "This host's own noise, over the first trial of the first {} configs: windows varied by a median {:.1f}% "
      "(IQR/median) and the last window was a median {:.1f}% off the first",
      n.trials, 100 * n.host_rel_iqr, 100 * n.host_drift);
  if (!n.raised)
    return t + fmt::format("; the given limits ({:.3g}% noise, {:.3g}% drift) are above what that noise produces and stay.",
                           100 * n.given_max_rel_iqr, 100 * n.given_max_drift);
  t += fmt::format(
      ". A config as steady as the host exceeds the given limits often, so they were raised to what such a config stays "
      "under in 19 trials of 20: noise {:.3g}% (given {:.3g}%), drift {:.3g}% (given {:.3g}%); a config noisier than that is "
      "noisy itself. Throughput differences of a few % are not resolved on this host (--calibrate-noise off keeps the given limits).",
      100 * s.max_rel_iqr, 100 * n.given_max_rel_iqr, 100 * s.max_drift, 100 * n.given_max_drift);
  if (n.at_cap) t += " A limit reached its ceiling (4× the given one): this host is too noisy to rank configs reliably; run on a quieter machine.";
  return t;
}

}  // namespace autotune
