#include "tuner/summary/batch_ramp.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "knobs/batch_ramp.h"
#include "knobs/numbers.h"

namespace autotune {

namespace {

/// The growth curve the run was priced with, at the run mean the ranking uses (a calibration by training moves its
/// level, not its shape), and the same at the band's two ends with the fit's exponent at its ends.
struct Curves {
  NoiseGrowthCurve mid, lo, hi;
};
Curves curves_of(const NoiseScaleSummary& n, double B0, const std::pair<double, double>& band) {
  const NoiseGrowthSummary& g = n.growth;
  NoiseGrowthCurve c;
  c.log_b_at_pivot = g.log_b_at_pivot;
  c.pivot = g.pivot;
  c.exponent = g.exponent;
  c.cap_samples = n.cap_samples > 0 ? n.cap_samples : c.cap_samples;
  Curves out;
  out.mid = with_run_mean(c, B0, n.run_samples, n.value);
  NoiseGrowthCurve lo = c, hi = c;
  lo.exponent = g.lo;
  hi.exponent = g.hi;
  out.lo = with_run_mean(lo, B0, n.run_samples, band.first);
  out.hi = std::isfinite(band.second) ? with_run_mean(hi, B0, n.run_samples, band.second) : hi;
  return out;
}

/// A config without its grad_accum: the configs a loop can switch between by accumulating more micro-batches.
std::string family_of(const Config& c) {
  Config f = c;
  f.erase("grad_accum");
  return f.key();
}

/// Per family, the best measured config at each of its global batches (stable, not an ablation).
std::map<std::string, std::map<std::int64_t, int>> families(const std::vector<ConfigSummary>& configs) {
  std::map<std::string, std::map<std::int64_t, int>> out;
  for (int j = 0; j < static_cast<int>(configs.size()); ++j) {
    const ConfigSummary& c = configs[j];
    if (!c.eligible || c.phase == "ablation" || !(c.median > 0)) continue;
    auto& at = out[family_of(c.config)];
    auto it = at.find(c.global_batch);
    if (it == at.end() || configs[it->second].median < c.median) at[c.global_batch] = j;
  }
  return out;
}

struct Candidate {
  std::vector<int> configs;  ///< option i → config index
  std::vector<RampOption> options;
  RampPrice price;
};

/// The cheapest ramp of at least two phases over every family; `families_with_two` counts the families it could try.
std::optional<Candidate> cheapest_family_ramp(const std::vector<ConfigSummary>& configs, const NoiseGrowthCurve& c, double B0,
                                              double run, int& families_with_two) {
  std::optional<Candidate> best;
  for (const auto& [family, at] : families(configs)) {
    if (at.size() < 2) continue;
    ++families_with_two;
    Candidate k;
    for (const auto& [batch, j] : at) {
      k.configs.push_back(j);
      k.options.push_back({batch, configs[j].median});
    }
    k.price = cheapest_ramp(c, B0, run, k.options);
    if (k.price.phases.size() >= 2 && (!best || k.price.seconds < best->price.seconds)) best = std::move(k);
  }
  return best;
}

/// Why no family gave a ramp: none had two batches, or the cheapest batch stayed cheapest all along.
std::string no_ramp_note(int families_with_two, const NoiseGrowthCurve& c, double run) {
  if (families_with_two == 0)
    return "no config was measured at two grad_accum with one micro-batch and the same knobs, so no ramp can be "
           "priced (put grad_accum in the space)";
  return fmt::format("along the run the noise scale grows from {} to {} samples, and over that range one batch of each "
                     "config stays the cheapest: a fixed batch is the answer",
                     with_commas(c.at(1)), with_commas(c.at(run)));
}

}  // namespace

void add_batch_ramp(RunSummary& s, const Objective& o, double lr) {
  RampAnswer& r = s.answer_c;
  const NoiseScaleSummary& n = s.noise_scale;
  if (!o.holds_user_batch()) return;  // throughput runs have no time answers
  if (!o.by_time() || !n.over_run || !(n.run_samples > 0)) {
    r.note = !o.by_time() ? "no usable noise scale (see above)"
                          : "the noise scale was not priced along the run" + (n.over_run_note.empty() ? "" : " (" + n.over_run_note + ")");
    return;
  }
  if (s.answer_a < 0 || !(s.configs[s.answer_a].median > 0)) {
    r.note = "no stable config at your batch to price a ramp against";
    return;
  }
  const double B0 = static_cast<double>(o.user_batch()), run = n.run_samples;
  const auto band = o.band();
  const Curves cv = curves_of(n, B0, band);
  int two = 0;
  const auto k = cheapest_family_ramp(s.configs, cv.mid, B0, run, two);
  if (!k) {
    r.note = no_ramp_note(two, cv.mid, run);
    return;
  }
  r.proposed = true;
  r.run_samples = run;
  r.lr_from = lr;
  r.band_lo = band.first;
  r.band_hi = band.second;
  for (const RampPhase& p : k->price.phases) {
    const ConfigSummary& c = s.configs[k->configs[p.option]];
    RampPhaseSummary ps;
    ps.config = k->configs[p.option];
    ps.global_batch = p.global_batch;
    ps.micro_batch = c.batch_size;
    ps.grad_accum = static_cast<int>(std::max<std::int64_t>(1, c.global_batch / std::max<std::int64_t>(1, c.batch_size)));
    ps.from_samples = p.from_samples;
    ps.to_samples = p.to_samples;
    ps.from_progress = p.from_progress;
    ps.to_progress = p.to_progress;
    ps.noise_at_start = p.noise_at_start;
    ps.samples_per_s = c.median;
    ps.seconds = p.seconds;
    ps.lr_gain = ramp_lr_gain(static_cast<double>(p.global_batch), B0, p.noise_at_start, n.value);
    ps.lr_adam = lr * std::sqrt(ps.lr_gain);
    ps.lr_sgd = lr * ps.lr_gain;
    r.phases.push_back(ps);
  }
  // Every answer priced over the same run from the search's samples/s: (a) and the baseline at B0 take run ÷ X under
  // any curve; (b) and the ramp follow each curve.
  const double xa = s.configs[s.answer_a].median;
  r.seconds = k->price.seconds;
  r.a_seconds = run / xa;
  if (s.baseline >= 0 && s.configs[s.baseline].median > 0) r.baseline_seconds = run / s.configs[s.baseline].median;
  const TimeAnswer& b = s.answer_b;
  const bool has_b = b.config >= 0 && s.configs[b.config].median > 0;
  auto fixed_b = [&](const NoiseGrowthCurve& c) {
    return fixed_batch_seconds(c, B0, run, static_cast<double>(b.global_batch), s.configs[b.config].median);
  };
  const double c_lo = price_ramp(cv.lo, B0, run, k->price.phases, k->options).seconds;
  const double c_hi = price_ramp(cv.hi, B0, run, k->price.phases, k->options).seconds;
  r.vs_a = r.a_seconds / r.seconds;
  r.vs_a_min = std::min(r.a_seconds / c_lo, r.a_seconds / c_hi);
  r.vs_a_max = std::max(r.a_seconds / c_lo, r.a_seconds / c_hi);
  if (has_b) {
    r.b_seconds = fixed_b(cv.mid);
    r.vs_b = r.b_seconds / r.seconds;
    const double lo = fixed_b(cv.lo) / c_lo, hi = fixed_b(cv.hi) / c_hi;
    r.vs_b_min = std::min(lo, hi);
    r.vs_b_max = std::max(lo, hi);
  }
  const double fixed = has_b ? std::min(r.vs_a, r.vs_b) : r.vs_a;
  const double fixed_min = has_b ? std::min(r.vs_a_min, r.vs_b_min) : r.vs_a_min;
  r.advised = fixed >= kRampMinGain && fixed_min > 1;
}

}  // namespace autotune
