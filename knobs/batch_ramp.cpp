#include "knobs/batch_ramp.h"

#include <algorithm>
#include <cmath>

#include "knobs/adascale.h"

namespace autotune {

namespace {

/// The ramp run's own samples per sample of progress at global batch B where the noise scale is bn.
double own_rate(double B, double B0, double bn) { return (B + bn) / (B0 + bn); }

/// ∫ own_rate de over [from, to]: B(e) is held below 1 sample, and smooth in log e above (Simpson's rule on a log
/// grid there).
double own_samples(const NoiseGrowthCurve& c, double B0, double B, double from, double to) {
  if (!(to > from)) return 0;
  double sum = 0;
  if (from < 1) {
    sum += (std::min(to, 1.0) - from) * own_rate(B, B0, c.at(1));
    from = 1;
    if (!(to > from)) return sum;
  }
  const int n = 400;  // even
  const double u0 = std::log(from), du = (std::log(to) - u0) / n;
  double simpson = 0;
  for (int i = 0; i <= n; ++i) {
    const double e = std::exp(u0 + i * du);
    simpson += (i == 0 || i == n ? 1.0 : i % 2 ? 4.0 : 2.0) * e * own_rate(B, B0, c.at(e));
  }
  return sum + simpson * du / 3;
}

/// The cheapest option where the noise scale is bn (the smaller batch on a tie); -1 when none has samples/s.
int cheapest_at(const std::vector<RampOption>& o, double bn) {
  int best = -1;
  double best_cost = 0;
  for (int i = 0; i < static_cast<int>(o.size()); ++i) {
    if (!(o[i].samples_per_s > 0)) continue;
    const double cost = (static_cast<double>(o[i].global_batch) + bn) / o[i].samples_per_s;
    if (best < 0 || cost < best_cost * (1 - 1e-12) ||
        (cost <= best_cost * (1 + 1e-12) && o[i].global_batch < o[best].global_batch)) {
      best = i;
      best_cost = cost;
    }
  }
  return best;
}

}  // namespace

double fixed_batch_seconds(const NoiseGrowthCurve& c, double B0, double run, double B, double X) {
  return X > 0 ? own_samples(c, B0, B, 0, run) / X : 0;
}

RampPrice cheapest_ramp(const NoiseGrowthCurve& c, double B0, double run, const std::vector<RampOption>& options) {
  RampPrice out;
  if (!(run > 0)) return out;
  // The switches in e: B(e) is nondecreasing, so the cheapest option changes at most once per crossing; each is found
  // on a log grid and refined by bisection.
  std::vector<std::pair<double, int>> starts;  // (e where a phase starts, its option)
  int current = cheapest_at(options, c.at(0));
  if (current < 0) return out;
  starts.push_back({0, current});
  const int n = 2000;
  const double u_hi = std::log(std::max(run, 1.0));
  double e_prev = 1;
  for (int i = 1; i <= n; ++i) {
    const double e = std::exp(i * u_hi / n);
    if (cheapest_at(options, c.at(e)) != current) {
      double lo = e_prev, hi = e;
      for (int k = 0; k < 60; ++k) {
        const double mid = std::sqrt(lo * hi);
        (cheapest_at(options, c.at(mid)) == current ? lo : hi) = mid;
      }
      current = cheapest_at(options, c.at(hi));
      starts.push_back({hi, current});
    }
    e_prev = e;
  }
  double own = 0;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    RampPhase p;
    p.option = starts[k].second;
    p.global_batch = options[p.option].global_batch;
    p.from_progress = starts[k].first;
    p.to_progress = k + 1 < starts.size() ? starts[k + 1].first : run;
    p.noise_at_start = c.at(p.from_progress);
    p.from_samples = own;
    own += own_samples(c, B0, static_cast<double>(p.global_batch), p.from_progress, p.to_progress);
    p.to_samples = own;
    p.seconds = (p.to_samples - p.from_samples) / options[p.option].samples_per_s;
    out.seconds += p.seconds;
    out.phases.push_back(p);
  }
  out.samples = own;
  return out;
}

RampPrice price_ramp(const NoiseGrowthCurve& c, double B0, double run, const std::vector<RampPhase>& phases,
                     const std::vector<RampOption>& options) {
  RampPrice out;
  if (phases.empty() || !(run > 0)) return out;
  std::size_t k = 0;
  RampPhase cur = phases[0];
  cur.from_progress = 0;
  cur.from_samples = 0;
  cur.noise_at_start = c.at(0);
  double own = 0;
  auto close = [&](double e) {
    cur.to_progress = e;
    cur.to_samples = own;
    cur.seconds = (cur.to_samples - cur.from_samples) / options[cur.option].samples_per_s;
    out.seconds += cur.seconds;
    out.phases.push_back(cur);
  };
  // Walk e on a fine grid (the part below 1 sample first, where B is held), switching when the own samples pass the
  // phase's end; a step that crosses a switch is split where it does (the rate is constant within a step).
  const int n = 8000;
  const double u_hi = std::log(std::max(run, 1.0));
  double e_a = 0;
  for (int i = 0; i <= n; ++i) {
    const double e_b = i == 0 ? std::min(1.0, run) : std::exp(i * u_hi / n);
    if (!(e_b > e_a)) continue;
    const double bn = c.at(std::sqrt(std::max(e_a, 1.0) * e_b));
    double e = e_a;
    while (e < e_b) {
      const double rate = own_rate(static_cast<double>(cur.global_batch), B0, bn);
      const double gain = rate * (e_b - e);
      const bool last = k + 1 >= phases.size();
      if (last || own + gain < phases[k].to_samples) {
        own += gain;
        e = e_b;
        break;
      }
      const double e_switch = e + (phases[k].to_samples - own) / rate;
      own = phases[k].to_samples;
      close(e_switch);
      ++k;
      cur = phases[k];
      cur.from_progress = e_switch;
      cur.from_samples = own;
      cur.noise_at_start = c.at(e_switch);
      e = e_switch;
    }
    e_a = e_b;
  }
  close(run);
  out.samples = own;
  return out;
}

NoiseGrowthCurve with_run_mean(NoiseGrowthCurve c, double B0, double run, double mean) {
  if (!(mean > 0) || !std::isfinite(mean)) return c;
  // The run mean rises with the intercept: bisect the shift in log B.
  double lo = -40, hi = 40;
  const double base = c.log_b_at_pivot;
  for (int k = 0; k < 80; ++k) {
    const double mid = 0.5 * (lo + hi);
    c.log_b_at_pivot = base + mid;
    (run_mean_noise_scale(c, B0, run) < mean ? lo : hi) = mid;
  }
  c.log_b_at_pivot = base + 0.5 * (lo + hi);
  return c;
}

double ramp_lr_gain(double B, double B0, double Bn, double run_mean) {
  if (!(B0 > 0) || !(B > 0)) return 1;
  const double held = std::max(run_mean, B0);
  return adascale_gain(B > held ? held : B, B0, Bn);
}

}  // namespace autotune
