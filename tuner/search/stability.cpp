#include "tuner/search/stability.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <tuple>

#include "knobs/numbers.h"
#include "tuner/search/ranking.h"
#include "tuner/measures/record_index.h"
#include "tuner/measures/statistics.h"

namespace autotune {

namespace {


int busy_attempts(const std::vector<const TrialRecord*>& attempts, const StabilityOptions& o);

bool quiet_ok(const TrialResult& r, const StabilityOptions& o) {
  return r.status == TrialStatus::ok && !r.windows.empty() && relative_iqr(r.throughputs()) <= o.max_rel_iqr &&
         std::abs(window_drift(r.throughputs())) <= o.max_drift && !host_busy(r, o);
}

}  // namespace

double default_max_quiet_wait() {
  if (const char* e = std::getenv("AUTOTUNE_QUIET_WAIT"); e && *e) {
    char* end = nullptr;
    const double seconds = std::strtod(e, &end);
    if (end && *end == '\0' && seconds >= 0 && seconds <= 3600) return seconds;
  }
  return 30;
}

double default_max_host_load() {
  if (const char* e = std::getenv("AUTOTUNE_MAX_HOST_LOAD"); e && *e) {
    char* end = nullptr;
    const double pct = std::strtod(e, &end);
    if (end && *end == '\0' && pct >= 1 && pct <= 100) return pct / 100;
  }
  return 0.10;
}

double busy_limit_cores(int cpus, const StabilityOptions& o) { return std::max(o.min_busy_cores, o.max_host_load * cpus); }

bool host_busy(const HostLoad& h, const StabilityOptions& o) { return h.other_cores > busy_limit_cores(h.cpus, o); }

bool device_busy(const TrialResult& r, const StabilityOptions& o) {
  return o.max_host_load < 1.0 && r.device_holders && r.device_holders->others > 0;  // --max-host-load 100: the guard is off
}

bool host_busy(const TrialResult& r, const StabilityOptions& o) {
  return (r.host_load && host_busy(*r.host_load, o)) || device_busy(r, o);
}

bool failed_quiet_host(const ConfigSummary& s) {
  return std::any_of(s.checks.begin(), s.checks.end(), [](const Check& c) { return c.name == kQuietHost && !c.passed; });
}

namespace {
int busy_attempts(const std::vector<const TrialRecord*>& attempts, const StabilityOptions& o) {
  int n = 0;
  for (const auto* a : attempts) n += host_busy(a->result, o) ? 1 : 0;
  return n;
}
}  // namespace

double window_drift(const std::vector<double>& t) {
  return t.size() >= 2 && t.front() > 0 ? t.back() / t.front() - 1 : 0.0;
}

namespace {

/// The numbers of the attempt `used`: its windows' median, CI, spread and drift, its batch and its peak memory.
void add_numbers(ConfigSummary& s, const TrialRecord& used) {
  const TrialResult& r = used.result;
  s.config = used.plan.config;
  s.measured_trial = used.id;
  s.status = r.status;
  s.is_baseline = used.kind == TrialKind::baseline;
  s.batch_size = r.batch_size;
  s.global_batch = global_batch(s.config, r.batch_size);
  s.breakdown = r.breakdown;
  s.host_malloc = r.host_malloc;
  s.minor_faults_per_step = r.minor_faults_per_step;
  s.compile_seconds = r.compile ? r.compile->seconds : 0;
  s.compile = r.compile;
  s.throughputs = r.throughputs();
  s.median = median(s.throughputs);
  const Interval ci = bootstrap_median_ci(s.throughputs);
  s.ci_lo = ci.lo;
  s.ci_hi = ci.hi;
  s.rel_iqr = relative_iqr(s.throughputs);
  s.drift = window_drift(s.throughputs);
  const bool on_gpu = r.peak_device_bytes >= 0;
  s.peak_bytes = on_gpu ? r.peak_device_bytes : r.peak_rss_bytes;
  s.dist = r.dist;
  if (r.memory) s.device_memory_peak = r.memory->peak();
  if (r.dist && !r.dist->ranks.empty()) {
    // Ranks on one CPU host share its memory (their RSS adds up); on GPUs each rank has its own device.
    std::int64_t sum = 0, mx = 0;
    for (const auto& k : r.dist->ranks) {
      sum += k.peak_rss_bytes;
      mx = std::max(mx, k.peak_device_bytes);
    }
    s.peak_bytes = on_gpu ? mx : sum;
  }
}

/// Whether the windows of `used` (one of `attempts`) agree (measurement noise), and its last window its first
/// (settled).
void add_timing_checks(ConfigSummary& s, const StabilityOptions& o, const std::vector<const TrialRecord*>& attempts,
                       const TrialRecord* used, const AttemptChain& before) {
  const std::size_t all = before.shorter + attempts.size();
  s.checks.push_back({"measurement noise", s.rel_iqr <= o.max_rel_iqr,
                      fmt::format("IQR/median {:.1f}% over {} windows {} {:.3g}% (attempt {} of {}{})", 100 * s.rel_iqr,
                                  s.throughputs.size(), s.rel_iqr <= o.max_rel_iqr ? "≤" : ">", 100 * o.max_rel_iqr,
                                  before.shorter + (std::find(attempts.begin(), attempts.end(), used) - attempts.begin()) + 1,
                                  all, before.shorter > 0 ? fmt::format("; windows {:g}× the run's", before.scale) : "")});
  // A trial still speeding up or slowing down (warm-up not over, throttling, a filling cache) can rank
  // wrongly even when its windows are close: its last window must agree with its first. A drifting trial
  // is re-measured in a fresh process; when every attempt drifted the config stays in the race, marked
  // (the search study, docs/search.md, measured rejecting it to cost more picks than it saved).
  const bool settled = std::abs(s.drift) <= o.max_drift;
  const bool exhausted = all >= static_cast<std::size_t>(1 + o.max_remeasure);
  s.unsettled = !settled && exhausted;
  s.checks.push_back({"settled", settled || exhausted,
                      settled ? fmt::format("last window {:+.1f}% vs the first (within ±{:.3g}%)", 100 * s.drift, 100 * o.max_drift)
                      : exhausted
                          ? fmt::format("marked unsettled: last window {:+.1f}% vs the first (beyond ±{:.3g}%) in each of {} "
                                        "attempts; kept, its number is less certain",
                                        100 * s.drift, 100 * o.max_drift, all)
                          : fmt::format("last window {:+.1f}% vs the first (beyond ±{:.3g}%)", 100 * s.drift, 100 * o.max_drift)});
}

}  // namespace

ConfigSummary summarize_config(const std::vector<const TrialRecord*>& attempts, const StabilityOptions& o) {
  return summarize_config(AttemptChain{attempts, 0, 1}, o);
}

ConfigSummary summarize_config(const AttemptChain& chain, const StabilityOptions& o) {
  const std::vector<const TrialRecord*> attempts(chain.attempts.begin() + static_cast<std::ptrdiff_t>(chain.shorter),
                                                 chain.attempts.end());
  const AttemptChain& before = chain;
  ConfigSummary s;
  const TrialRecord* used = attempts.back();
  for (const auto* a : chain.attempts) s.trial_ids.push_back(a->id);
  for (const auto* a : attempts)
    if (used == attempts.back() && quiet_ok(a->result, o)) used = a;
  const TrialResult& r = used->result;
  add_numbers(s, *used);
  const bool on_gpu = r.peak_device_bytes >= 0;

  // survival
  s.checks.push_back({"survival", r.status == TrialStatus::ok,
                      r.status == TrialStatus::ok ? fmt::format("worker finished ({})", used->outcome)
                                                  : fmt::format("{}: {}", to_string(r.status), r.message)});
  // numerics
  int non_finite = 0;
  for (double l : r.losses) non_finite += std::isfinite(l) ? 0 : 1;
  non_finite = std::max(non_finite, r.non_finite_steps);
  s.checks.push_back({"finite loss", r.status != TrialStatus::non_finite && non_finite == 0,
                      fmt::format("{} non-finite of {} measured losses", non_finite, r.losses.size())});
  // fp16 loss scaling: a few skipped steps while the scale settles are normal, many are not
  if (r.scaler_skips > 0 || used->plan.config.get("precision") == "amp_fp16") {
    const double rate = r.losses.empty() ? 0 : static_cast<double>(r.scaler_skips) / static_cast<double>(r.losses.size());
    s.checks.push_back({"scaler skips", rate <= o.max_scaler_skip_rate,
                        fmt::format("{} of {} measured steps skipped ({:.1f}%, limit {:.0f}%)", r.scaler_skips, r.losses.size(),
                                    100 * rate, 100 * o.max_scaler_skip_rate)});
  }
  if (r.status == TrialStatus::ok) add_timing_checks(s, o, attempts, used, before);
  // the busy-host guard: what else ran on the trial's CPUs while it was timed
  if (r.status == TrialStatus::ok && (r.host_load || r.device_holders)) {
    std::string what;
    if (r.host_load)
      what = fmt::format("other processes used {:.2f} of {} CPUs during the measured windows (limit {:.2f}){}", r.host_load->other_cores,
                         r.host_load->cpus, busy_limit_cores(r.host_load->cpus, o),
                         r.host_load->steal_cores >= 0.05
                             ? fmt::format(", {:.2f} of it the hypervisor running other guests on them (steal)",
                                           r.host_load->steal_cores)
                             : "");
    if (r.device_holders)
      what += fmt::format("{}{} other process(es) held the GPU ({:.0f} MiB; allowed: none)", what.empty() ? "" : "; ",
                          r.device_holders->others, r.device_holders->other_bytes / (1 << 20));
    s.checks.push_back({kQuietHost, !host_busy(r, o),
                        what + (host_busy(r, o) ? fmt::format("; busy in {} of {} attempts", busy_attempts(attempts, o), attempts.size())
                                                : "")});
  }
  // memory headroom
  const std::int64_t total = on_gpu ? r.device_total_bytes : r.host_total_bytes;
  s.memory_total_bytes = total > 0 ? total : 0;
  if (total > 0 && s.peak_bytes > 0) {
    const double share = static_cast<double>(s.peak_bytes) / static_cast<double>(total);
    s.checks.push_back({"memory headroom", share <= 1 - o.memory_headroom,
                        fmt::format("peak {} {} = {:.1f}% of {} (limit {:.0f}%)", on_gpu ? "device" : "RSS", mib(s.peak_bytes),
                                    100 * share, mib(total), 100 * (1 - o.memory_headroom))});
  }
  if (on_gpu)
    s.checks.push_back({"allocator retries", r.alloc_retries == 0,
                        fmt::format("{} cudaMalloc retries during measured steps (allowed: 0)", r.alloc_retries)});

  s.eligible = true;
  // A config timed beside another program is rejected as that, whatever else failed: its numbers are the other
  // program's, and every count of busy configs (the busy-host line, the no-stable-config line) agrees with its reason.
  for (const auto& c : s.checks)
    if (!c.passed && c.name == kQuietHost) s.reason = "host busy: " + c.detail;
  for (const auto& c : s.checks) {
    if (!c.passed) {
      s.eligible = false;
      if (s.reason.empty())
        s.reason = c.name == "measurement noise" ? "noisy: " + c.detail
                   : c.name == "settled"         ? "drifting: " + c.detail
                   : c.name == kQuietHost        ? "host busy: " + c.detail
                                                 : c.detail;
    }
  }
  return s;
}

Check loss_trajectory_check(const TrialResult& run, const TrialResult& ref, double tolerance) {
  std::vector<double> a = run.warmup_losses, b = ref.warmup_losses;
  a.insert(a.end(), run.losses.begin(), run.losses.end());
  b.insert(b.end(), ref.losses.begin(), ref.losses.end());
  const size_t n = std::min(a.size(), b.size());
  Check c{"loss vs fp32 reference", false, ""};
  if (n < 10) {
    c.detail = fmt::format("only {} common steps with the fp32 reference (need 10)", n);
    return c;
  }
  auto mean10 = [](const std::vector<double>& v, size_t end) {
    double m = 0;
    for (size_t i = end - 10; i < end; ++i) m += v[i] / 10;
    return m;
  };
  const double ma = mean10(a, n), mb = mean10(b, n);
  // The reference's curve up to `lag` steps earlier: while a model is still learning fast (seen on an
  // H100: resnet50 memorising its synthetic batch, loss 7 → 0.2 in 20 steps) bf16 trails fp32 by a
  // step or two, and the means of two steep curves differ by a third although both learn alike. A run
  // that diverges, stalls or lags further stays outside the band; on a flat curve the band is the mean.
  const size_t lag = std::min(n - 10, std::max<size_t>(1, static_cast<size_t>(std::lround(0.15 * static_cast<double>(n)))));
  double lo = mb, hi = mb;
  for (size_t l = 1; l <= lag; ++l) {
    lo = std::min(lo, mean10(b, n - l));
    hi = std::max(hi, mean10(b, n - l));
  }
  const double rel = mb != 0 ? std::abs(ma - mb) / std::abs(mb) : std::abs(ma - mb);
  const bool in_band = ma >= lo - tolerance * std::abs(lo) && ma <= hi + tolerance * std::abs(hi);
  c.passed = std::isfinite(ma) && (rel <= tolerance || in_band);
  c.detail = fmt::format("mean loss over steps {}–{}: {:.4f} vs fp32 {:.4f} ({:.1f}% apart, limit {:.0f}%", n - 9, n, ma, mb,
                         100 * rel, 100 * tolerance);
  c.detail += lag > 0 && rel > tolerance
                  ? fmt::format(", or within fp32's curve up to {} steps earlier: {:.4f}–{:.4f})", lag, lo, hi)
                  : ")";
  return c;
}

HostNoise host_noise(const std::vector<const TrialRecord*>& first_attempts, const MeasureOptions& base, int calibration_trials,
                     const StabilityOptions& guard) {
  std::vector<double> iqr, drift;
  int busy = 0;
  for (const TrialRecord* r : first_attempts) {
    if (static_cast<int>(iqr.size()) >= calibration_trials) break;
    if (r->kind != TrialKind::baseline && r->kind != TrialKind::search) continue;
    if (r->result.status != TrialStatus::ok || r->result.windows.size() < 3) continue;
    if (std::abs(window_scale(*r, base) - 1) > 1e-9) continue;
    if (host_busy(r->result, guard)) {
      ++busy;
      continue;
    }
    const std::vector<double> t = r->result.throughputs();
    iqr.push_back(relative_iqr(t));
    drift.push_back(std::abs(window_drift(t)));
  }
  HostNoise h;
  h.trials = static_cast<int>(iqr.size());
  h.busy = busy;
  if (h.trials > 0) {
    h.rel_iqr = median(iqr);
    h.drift = median(drift);
  }
  return h;
}

namespace {

/// 95th percentile ÷ median of a statistic of `n` windows drawn from one normal distribution (the
/// statistic is scale-free): fixed-seed Monte Carlo, computed once per window count.
struct NoiseRatios {
  double iqr = 2.1, drift = 2.9;
};
NoiseRatios noise_ratios(int n) {
  static std::mutex m;
  static std::map<int, NoiseRatios> cache;
  std::lock_guard<std::mutex> lock(m);
  if (auto it = cache.find(n); it != cache.end()) return it->second;
  std::mt19937_64 rng(20261123);
  std::normal_distribution<double> z;
  constexpr int draws = 20000;
  std::vector<double> iqr(draws), drift(draws), x(static_cast<std::size_t>(n));
  for (int d = 0; d < draws; ++d) {
    for (double& v : x) v = z(rng);
    iqr[d] = quantile(x, 0.75) - quantile(x, 0.25);
    drift[d] = std::abs(x.back() - x.front());
  }
  NoiseRatios r{quantile(iqr, 0.95) / median(iqr), quantile(drift, 0.95) / median(drift)};
  return cache[n] = r;
}

}  // namespace

StabilityOptions calibrated(const StabilityOptions& o, const HostNoise& h, int windows) {
  if (!o.calibrate || h.trials < o.calibration_trials || windows < 3) return o;
  const NoiseRatios k = noise_ratios(windows);
  StabilityOptions c = o;
  c.max_rel_iqr = std::clamp(k.iqr * h.rel_iqr, o.max_rel_iqr, o.max_raise * o.max_rel_iqr);
  c.max_drift = std::clamp(k.drift * h.drift, o.max_drift, o.max_raise * o.max_drift);
  return c;
}

bool at_ceiling(const StabilityOptions& in_force, const StabilityOptions& given) {
  return in_force.max_rel_iqr >= given.max_raise * given.max_rel_iqr - 1e-12 ||
         in_force.max_drift >= given.max_raise * given.max_drift - 1e-12;
}

bool wants_remeasure(const ConfigSummary& s, std::size_t attempts, const StabilityOptions& o) {
  return s.status == TrialStatus::ok && (s.rel_iqr > o.max_rel_iqr || std::abs(s.drift) > o.max_drift || failed_quiet_host(s)) &&
         attempts < static_cast<std::size_t>(1 + o.max_remeasure);
}

AttemptChain attempt_chain(const RecordIndex& index, const Config& c, double scale) {
  AttemptChain out;
  out.scale = scale;
  for (double s = scale;;) {
    const auto& here = index.attempts(c, s);
    out.attempts.insert(out.attempts.begin(), here.begin(), here.end());
    if (s != scale) out.shorter += here.size();
    if (here.empty() || here.front()->kind != TrialKind::remeasure) return out;
    do s /= 2;  // the window it lengthened: the longest shorter one (a power of two below) with attempts
    while (s >= 1 && index.attempts(c, s).empty());
    if (s < 1) return out;
  }
}

double data_share(const Breakdown& b) {
  const double total = b.data_ms + b.h2d_ms + b.forward_ms + b.backward_ms + b.optimizer_ms + b.other_ms;
  return total > 0 ? b.data_ms / total : 0.0;
}

double remeasure_scale(const ConfigSummary& s, double scale, const StabilityOptions& o) {
  const double over = std::max(o.max_rel_iqr > 0 ? s.rel_iqr / o.max_rel_iqr : 0, o.max_drift > 0 ? std::abs(s.drift) / o.max_drift : 0);
  if (s.status != TrialStatus::ok || over <= 1 || failed_quiet_host(s) || data_share(s.breakdown) < kInputBoundShare ||
      scale >= kMaxWindowScale)
    return scale;
  double longer = 2 * scale;  // the spread of a window's mean falls as 1/sqrt(its length): `over`² as long is at the limit
  while (longer < scale * over * over * (1 - 1e-9) && longer < kMaxWindowScale) longer *= 2;  // (1e-9: 2× the limit is 4×)
  return std::min(longer, kMaxWindowScale);
}

void verify_leaders(History& history, int top, double tolerance,
                    const std::function<const TrialRecord*(const Config&)>& reference_for,
                    const std::function<const TrialRecord*(const ConfigSummary&)>& measured) {
  static const std::string kName = "loss vs fp32 reference";
  for (bool changed = true; changed;) {  // each pass verifies or rejects at least one leader, or stops
    changed = false;
    auto lead = ranked_candidates(history);
    for (size_t i = 0; i < lead.size() && i < static_cast<size_t>(std::max(top, 0)); ++i) {
      ConfigSummary s = *lead[i];
      // Numerics change under autocast and under torch.compile (fused kernels, another reduction order): the twin is
      // the same config in fp32 and eager.
      const bool compiled = s.config.get("compile", "off") != "off";
      if (s.config.get("precision", "fp32") == "fp32" && !compiled) continue;
      if (std::any_of(s.checks.begin(), s.checks.end(), [](const Check& c) { return c.name == kName; })) continue;
      Config twin = s.config;
      twin.set("precision", "fp32");
      if (compiled) twin.set("compile", "off");
      const TrialRecord* ref = reference_for(twin);
      const TrialRecord* run = measured(s);
      Check c;
      if (!ref) c = {kName, false, "unverified: no fp32 reference run (the budget ended first), so it cannot win"};
      else if (ref->result.status != TrialStatus::ok) c = {kName, false, "the fp32 reference failed: " + ref->result.message};
      else if (!run) c = {kName, false, "unverified: the measured trial is missing from the journal"};
      else c = loss_trajectory_check(run->result, ref->result, tolerance);
      s.checks.push_back(c);
      if (!c.passed) {
        s.eligible = false;
        s.reason = (ref && ref->result.status == TrialStatus::ok && run ? "diverged: " : "") + c.detail;
        changed = true;
      }
      history.add(s);
      if (changed) break;  // re-rank: the next candidate moves up
    }
  }
}

}  // namespace autotune
