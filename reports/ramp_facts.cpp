#include "reports/ramp_facts.h"

#include <fmt/format.h>

#include <cmath>

#include "knobs/numbers.h"
#include "knobs/worker_info.h"
#include "reports/markdown.h"

namespace autotune {

std::string ramp_text(const RunSummary& s, const std::function<std::string(const std::string&)>& code) {
  const RampAnswer& r = s.answer_c;
  if (!s.by_time) return "";
  if (!r.proposed) return r.note.empty() ? "" : "(c) No batch ramp: " + r.note + ".";
  std::string batches, accums, switches;
  for (std::size_t k = 0; k < r.phases.size(); ++k) {
    const RampPhaseSummary& p = r.phases[k];
    batches += (k ? " → " : "") + std::to_string(p.global_batch);
    accums += (k ? " → " : "") + std::to_string(p.grad_accum);
    if (k)
      switches += fmt::format("{}{} (B ≈ {})", k > 1 ? ", " : "", with_commas(std::round(p.from_samples)),
                              with_commas(p.noise_at_start));
  }
  const RampPhaseSummary& first = r.phases.front();
  const std::string knobs = s.baseline >= 0 ? s.configs[first.config].config.diff_key(s.configs[s.baseline].config) : "";
  std::string text = fmt::format(
      "(c) A batch ramp — global batch {} (grad_accum {} at micro-batch {}{}): switch after {} of its own samples, where the "
      "fitted noise scale makes the bigger batch cheaper. Predicted time to your run's loss ({} samples at batch {}; each "
      "phase at its config's samples/s from the search): the ramp {}, (a) {}",
      batches, accums, first.micro_batch, knobs.empty() || knobs == "(baseline)" ? "" : ", " + code(knobs), switches,
      with_commas(std::round(r.run_samples)), s.user_batch, duration_text(r.seconds), duration_text(r.a_seconds));
  if (r.b_seconds > 0) text += fmt::format(", (b) {}", duration_text(r.b_seconds));
  text += fmt::format(", the baseline {}. The ramp is {:.2f}× (a)'s speed ({:.2f}–{:.2f}× across B̄ from {} to {})",
                      duration_text(r.baseline_seconds), r.vs_a, r.vs_a_min, r.vs_a_max, with_commas(r.band_lo),
                      std::isfinite(r.band_hi) ? with_commas(r.band_hi) : "∞");
  if (r.b_seconds > 0) text += fmt::format(" and {:.2f}× (b)'s ({:.2f}–{:.2f}×)", r.vs_b, r.vs_b_min, r.vs_b_max);
  const bool b_faster = r.b_seconds > 0 && r.b_seconds < r.a_seconds;
  const double vs_fixed = b_faster ? r.vs_b : r.vs_a, vs_fixed_min = r.b_seconds > 0 ? std::min(r.vs_a_min, r.vs_b_min) : r.vs_a_min;
  if (r.advised)
    text += fmt::format(". At least {:.0f}% faster than the better fixed batch and faster across the band: a schedule to try "
                        "(`autotune converge --compare ramp` trains it against the fixed batches); each switch raises the "
                        "learning rate (the phases below).",
                        100 * (kRampMinGain - 1));
  else if (vs_fixed < 1)
    text += fmt::format(". The better fixed batch, {}, is faster ({:.2f}× the ramp's time): listed, not advised.",
                        b_faster ? "(b)" : "(a)", 1 / vs_fixed);
  else if (vs_fixed < kRampMinGain)
    text += fmt::format(". That is within {:.0f}% of the better fixed batch ({}, {:.2f}×): most of the run's samples come after "
                        "the noise scale has grown, so the early phases save little; a fixed batch does as well, listed, not advised.",
                        100 * (kRampMinGain - 1), b_faster ? "(b)" : "(a)", vs_fixed);
  else
    text += fmt::format(". At the band's worse end it is {:.2f}× the better fixed batch: listed, not advised.", vs_fixed_min);
  return text;
}

std::vector<RampStep> ramp_steps(const RunSummary& s) {
  std::vector<RampStep> out;
  if (!s.answer_c.proposed) return out;
  for (std::size_t k = 0; k < s.answer_c.phases.size(); ++k) {
    const RampPhaseSummary& p = s.answer_c.phases[k];
    // the rule's, as (b)'s hint applies it: SGD-like × r, Adam-like × √r, an optimizer that is neither keeps the user's rate
    double lr = lr_at_gain(s.answer_c.lr_from, p.lr_gain, s.workload.optimizer_family);
    if (const RampPhaseAtMeasured* m = s.lr_measured.ramp.swept(k)) lr = m->lr;  // a sweep measured this batch's rate
    out.push_back({static_cast<std::int64_t>(std::llround(p.from_samples)), p.grad_accum, lr});
  }
  return out;
}

std::vector<RampRow> ramp_rows(const RunSummary& s) {
  std::vector<RampRow> rows;
  const RampAnswer& r = s.answer_c;
  if (!r.proposed) return rows;
  for (std::size_t k = 0; k < r.phases.size(); ++k) {
    const RampPhaseSummary& p = r.phases[k];
    RampRow row;
    row.phase = std::to_string(k + 1);
    row.batch = fmt::format("{} = {} × {}", p.global_batch, p.micro_batch, p.grad_accum);
    row.span = fmt::format("{} – {}", with_commas(std::round(p.from_samples)), with_commas(std::round(p.to_samples)));
    row.noise = with_commas(p.noise_at_start);
    row.rate = with_commas(p.samples_per_s);
    row.time = duration_text(p.seconds);
    if (r.lr_from <= 0)
      row.lr = fmt::format("× √{:.3g}", p.lr_gain);
    else if (!lr_rule_known(s.workload.optimizer_family))  // the loop keeps the user's rate (ramp_steps)
      row.lr = fmt::format("{:.3g} kept: {} has no rule (Adam-like {:.3g}, SGD-like {:.3g})", r.lr_from,
                           s.workload.optimizer.empty() ? "the optimizer" : s.workload.optimizer, p.lr_adam, p.lr_sgd);
    else
      row.lr = fmt::format("{:.3g} (× √{:.3g}); SGD {:.3g}", p.lr_adam, p.lr_gain, p.lr_sgd);
    if (const RampPhaseAtMeasured* m = s.lr_measured.ramp.swept(k)) row.lr += fmt::format("; measured {:.3g}", m->lr);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace autotune
