#include "tuner/memory/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "knobs/knob.h"

namespace autotune {

namespace {

/// Knobs that do not move the allocator's peak: threads and loss reads are host-side, bucket sizes
/// split the same gradient bytes differently, static_graph and broadcast_buffers change no tensor sizes.
const std::set<std::string>& neutral_knobs() {
  static const std::set<std::string> s = {"batch_size", "threads", "log_every", "bucket_mb", "first_bucket_mb",
                                          "static_graph", "broadcast_buffers"};
  return s;
}

}  // namespace

std::string memory_family(const Config& c, const std::map<std::string, std::string>& defaults) {
  std::string key;
  for (const Knob& k : knob_catalog()) {
    if (neutral_knobs().count(k.name)) continue;
    std::string v = c.get(k.name, Config::default_of(k.name, defaults));
    if (k.name == "precision" && v == "tf32") v = "fp32";  // the same tensors; only the matmul's math differs
    if (v == Config::default_of(k.name, defaults) || (k.name == "precision" && v == "fp32")) continue;
    key += (key.empty() ? "" : " ") + k.name + "=" + v;
  }
  return key.empty() ? "(defaults)" : key;
}

MemoryModel::Curve MemoryModel::curve(std::vector<std::pair<double, double>> xy) {
  std::sort(xy.begin(), xy.end());
  Curve c;
  for (const auto& [x, y] : xy) {
    if (!c.pts.empty() && c.pts.back().first == x) c.pts.back().second = std::max(c.pts.back().second, y);
    else c.pts.push_back({x, y});
  }
  return c;
}

double MemoryModel::Curve::slope_at(double b, double min_slope_beyond) const {
  if (pts.size() < 2) return 0;
  std::size_t i = 1;  // the segment [i-1, i] holding b; the first below, the last beyond
  while (i + 1 < pts.size() && b > pts[i].first) ++i;
  const double s = (pts[i].second - pts[i - 1].second) / (pts[i].first - pts[i - 1].first);
  return b > pts.back().first ? std::max(s, min_slope_beyond) : s;
}

double MemoryModel::Curve::at(double b, double min_slope_beyond) const {
  if (pts.empty()) return 0;
  if (pts.size() == 1) return pts[0].second;
  if (b > pts.back().first) return pts.back().second + slope_at(b, min_slope_beyond) * (b - pts.back().first);
  std::size_t i = 1;
  while (i + 1 < pts.size() && b > pts[i].first) ++i;
  return pts[i - 1].second + slope_at(b) * (b - pts[i - 1].first);
}

StateBytes MemoryModel::states_for(const Family& f, const Config& c) const {
  const int ranks = std::stoi(c.get("ranks", Config::default_of("ranks", defaults_)));
  return analytic_states(f.numels, f.elem_bytes, c.get("optimizer_impl", Config::default_of("optimizer_impl", defaults_)), ranks,
                         c.get("grad_as_bucket_view", Config::default_of("grad_as_bucket_view", defaults_)) == "true", f.round);
}

void MemoryModel::add(const TrialRecord& rec) {
  const TrialResult& r = rec.result;
  const bool probe = rec.kind == TrialKind::memory;
  if (!r.memory) {
    if (probe) {  // a probe that died before writing its memory: its family is not predicted
      Family& f = fams_[memory_family(rec.plan.config, defaults_)];
      f.probed = true;
      f.example = rec.plan.config;
      f.failed = fmt::format("its probe at batch {} ended with {}: {}", rec.plan.config.get("batch_size", "?"),
                             to_string(r.status), r.message.empty() ? rec.outcome : r.message);
    }
    return;
  }
  const MemoryRecord& m = *r.memory;
  const std::string key = memory_family(rec.plan.config, defaults_);
  const MemoryPrediction before = predict(rec.plan.config);
  Family& f = fams_[key];
  if (probe) f.probed = true;
  f.example = rec.plan.config;
  if (!m.param_numels.empty()) {
    f.numels = m.param_numels;
    f.elem_bytes = m.param_elem_bytes;
  }
  f.round = m.round_bytes;
  if (o_.capacity_bytes <= 0) o_.capacity_bytes = m.capacity_bytes;
  if (r.status == TrialStatus::oom) {
    if (f.oom_batch == 0 || m.batch_size < f.oom_batch) {
      f.oom_batch = m.batch_size;
      f.oom_trial = rec.id;
    }
    const std::int64_t seen = std::max(m.peak_allocated, m.capacity_bytes);
    if (!probe && before.known && before.fits)
      misses_.push_back({rec.plan.config, rec.id, before.hi, seen,
                         fmt::format("trial {} at batch {} ran out of memory where {} ≤ {} was predicted to fit", rec.id,
                                     m.batch_size, format_bytes(before.hi), format_bytes(o_.capacity_bytes))});
    return;
  }
  if (r.status != TrialStatus::ok) {
    if (probe) f.failed = fmt::format("its probe at batch {} ended with {}: {}", m.batch_size, to_string(r.status), r.message);
    return;
  }
  if (!probe && before.known && m.peak_allocated > before.hi)
    misses_.push_back({rec.plan.config, rec.id, before.hi, m.peak_allocated,
                       fmt::format("trial {} at batch {} peaked at {}, above the predicted {} (upper bound)", rec.id,
                                   m.batch_size, format_bytes(m.peak_allocated), format_bytes(before.hi))});
  if (!probe && before.known && m.alloc_retries > 0 && before.fits)
    misses_.push_back({rec.plan.config, rec.id, before.hi, m.peak_reserved,
                       fmt::format("trial {} at batch {} made the allocator free its cache and retry {} times", rec.id,
                                   m.batch_size, m.alloc_retries)});
  const double ratio = m.peak_allocated > 0 && m.peak_reserved > m.peak_allocated
                           ? static_cast<double>(m.peak_reserved) / static_cast<double>(m.peak_allocated)
                           : 1.0;
  f.points.push_back({m.batch_size, m.forward_peak, m.backward_peak, m.optimizer_peak, m.states_bytes(), ratio, rec.id, probe});
}

bool MemoryModel::needs_probes(const Config& c) const {
  const auto it = fams_.find(memory_family(c, defaults_));
  if (it == fams_.end()) return true;
  if (!it->second.failed.empty() || it->second.probed) return false;
  std::set<std::int64_t> batches;
  for (const auto& pt : it->second.points) batches.insert(pt.batch);
  return batches.size() < 2;
}

MemoryPrediction MemoryModel::predict(const Config& c) const {
  MemoryPrediction p;
  p.family = memory_family(c, defaults_);
  p.capacity = o_.capacity_bytes;
  const auto it = fams_.find(p.family);
  const std::int64_t b = std::stoll(c.get("batch_size", Config::default_of("batch_size", defaults_)));
  p.batch = b;
  if (it == fams_.end()) {
    p.why_unknown = "no probe of this family";
    return p;
  }
  const Family& f = it->second;
  if (f.oom_batch > 0 && b >= f.oom_batch) {
    p.oom_seen = fmt::format("batch {} ran out of memory (trial {})", f.oom_batch, f.oom_trial);
    p.fits = false;
  }
  std::set<std::int64_t> batches;
  for (const auto& pt : f.points) batches.insert(pt.batch);
  if (batches.size() < 2) {
    p.why_unknown = !f.failed.empty() ? f.failed + "; run it to know"
                                      : fmt::format("{} batch size{} observed; two are needed", batches.size(), batches.size() == 1 ? "" : "s");
    return p;
  }
  // One curve per phase: the peak of a step is the largest of the three, each linear in the batch on its own.
  std::vector<std::pair<double, double>> xy[3];
  for (const auto& pt : f.points) {
    const double x = static_cast<double>(pt.batch), st = static_cast<double>(pt.states_counted);
    xy[0].push_back({x, pt.forward - st});
    xy[1].push_back({x, pt.backward - st});
    xy[2].push_back({x, pt.optimizer - st});
  }
  const Curve cv[3] = {curve(xy[0]), curve(xy[1]), curve(xy[2])};
  static const char* names[3] = {"forward", "backward", "optimizer"};
  p.points = static_cast<int>(f.points.size());
  // The check of the method itself: the largest observed batch predicted from the smaller ones alone (an
  // extrapolation, as every prediction beyond the points is), each phase on its own.
  if (cv[0].pts.size() >= 3) {
    const double bl = cv[0].pts.back().first;
    std::int64_t st = 0;
    for (const auto& pt : f.points)
      if (pt.batch == static_cast<std::int64_t>(bl)) st = pt.states_counted;
    double meas = 0, miss = 0;
    for (const auto& c3 : cv) meas = std::max(meas, c3.at(bl) + st);
    Curve sm[3] = {cv[0], cv[1], cv[2]};
    for (auto& c3 : sm) c3.pts.pop_back();
    const double fwd_slope = sm[0].slope_at(bl);
    for (int i = 0; i < 3; ++i) miss = std::max(miss, std::abs(sm[i].at(bl, i == 1 ? fwd_slope : 0) - cv[i].at(bl)));
    if (meas > 0) p.fit_error = miss / meas;
  }
  p.states = states_for(f, c);
  int top = 0;
  double v[3];
  const double fwd_slope = cv[0].slope_at(b);
  for (int i = 0; i < 3; ++i) {
    v[i] = p.states.total() + cv[i].at(b, i == 1 ? fwd_slope : 0);
    if (v[i] > v[top]) top = i;
  }
  p.phase = names[top];
  const int act = v[0] >= v[1] ? 0 : 1;
  p.per_sample = static_cast<std::int64_t>(std::llround(cv[act].slope_at(b, act == 1 ? fwd_slope : 0)));
  p.activations = static_cast<std::int64_t>(std::llround(cv[act].at(b, act == 1 ? fwd_slope : 0)));
  p.optimizer_transient = static_cast<std::int64_t>(std::llround(cv[2].at(b)));
  const double peak = v[top];
  // Beyond the largest batch observed the curves are extrapolations, and what the points do not show (an
  // algorithm or workspace that changes with the batch) grows with the distance: the method's own check
  // error, at least 1%, plus 1.5% per doubling beyond the points (docs/memory.md).
  const double bmax = cv[0].pts.back().first;
  const double doublings = b > bmax && bmax > 0 ? std::log2(static_cast<double>(b) / bmax) : 0.0;
  const double half = std::max(0.01, p.fit_error) * peak + 0.015 * doublings * peak;
  p.peak = static_cast<std::int64_t>(std::llround(peak));
  p.lo = static_cast<std::int64_t>(std::llround(peak - half));
  // The caching allocator keeps freed blocks reserved and splits segments; what must fit the device is
  // reserved memory: the upper end carries the largest reserved ÷ allocated ratio the family showed.
  for (const auto& pt : f.points) p.reserved_ratio = std::max(p.reserved_ratio, pt.reserved_ratio);
  p.hi = static_cast<std::int64_t>(std::llround((peak + half) * p.reserved_ratio));
  if (p.fit_error > o_.max_fit_error && b > bmax) {
    p.why_unknown = fmt::format("the probes predict their own largest batch {:.1f}% off (> {:.0f}%): the peak is not linear "
                                "in the batch here; run it to know",
                                100 * p.fit_error, 100 * o_.max_fit_error);
    return p;
  }
  p.known = true;
  if (p.capacity > 0 && static_cast<double>(p.hi) > p.capacity * (1 - o_.margin)) p.fits = false;
  return p;
}

std::int64_t MemoryModel::largest_fitting(const Config& c, const std::vector<std::int64_t>& candidates, std::int64_t max_batch) const {
  std::vector<std::int64_t> bs = candidates;
  if (bs.empty())
    for (std::int64_t b = 1; b <= max_batch; b *= 2) bs.push_back(b);
  std::sort(bs.rbegin(), bs.rend());
  bool any_known = false;
  for (std::int64_t b : bs) {
    if (b > max_batch) continue;
    Config x = c;
    x.set("batch_size", std::to_string(b));
    const MemoryPrediction p = predict(x);
    if (!p.known) continue;
    any_known = true;
    if (p.fits) return b;
  }
  return any_known ? 0 : -1;
}

std::vector<MemoryModel::StatesCheck> MemoryModel::states_checks() const {
  std::vector<StatesCheck> out;
  for (const auto& [key, f] : fams_) {
    if (f.points.empty() || f.numels.empty()) continue;
    out.push_back({key, f.points.back().states_counted, states_for(f, f.example).total()});
  }
  return out;
}

std::string MemoryModel::cannot_fit_advice(const Config& c) const {
  Config one = c;
  one.set("batch_size", "1");
  const MemoryPrediction p = predict(one);
  if (!p.known || p.fits || p.capacity <= 0) return "";
  const double usable = p.capacity * (1 - o_.margin);
  std::int64_t n = 0;
  const auto it = fams_.find(p.family);
  for (std::int64_t e : it->second.numels) n += e;
  const double act = std::max<double>(0, std::max(p.activations, p.optimizer_transient));
  // Sharding helps when the activations of batch 1 fit and the states are what overflows the rest.
  const double room = usable - act;
  if (room > 0 && static_cast<double>(p.states.total()) > room) {
    // Sharding the model states over N ranks (ZeRO, Rajbhandari et al. 2020; PyTorch FSDP): fp32 AdamW keeps
    // 4 (parameter) + 4 (gradient) + 8 (m, v) = 16 bytes per parameter; stage 1 shards the 8, stage 2 the
    // gradient too, stage 3 / FSDP everything.
    const auto ranks_for = [&](double fixed, double sharded) -> std::string {
      if (room <= fixed) return "cannot fit at any N";
      return fmt::format("needs {} ranks", static_cast<std::int64_t>(std::ceil(sharded / (room - fixed))));
    };
    const double P = static_cast<double>(n);
    return fmt::format(
        "even batch 1 cannot fit: the model states are {} ({} parameters × 16 bytes: fp32 parameters, gradients and "
        "AdamW's m and v) and the activations of batch 1 {}, against {} usable ({} less the {:.0f}% margin). Shard the "
        "model states: fully sharded (ZeRO-3 / FSDP, 16 B/parameter ÷ N) {}; optimizer state and gradients sharded "
        "(ZeRO-2, 4 B + 12 B ÷ N) {}; optimizer state only (ZeRO-1, 8 B + 8 B ÷ N) {}. (Mixed-precision Adam is 16 "
        "B/parameter too in the ZeRO paper's count: 2 + 2 for fp16 parameters and gradients, 12 for fp32 master, m and v.)",
        format_bytes(p.states.total()), n, format_bytes(static_cast<std::int64_t>(act)),
        format_bytes(static_cast<std::int64_t>(usable)), format_bytes(p.capacity), 100 * o_.margin, ranks_for(0, 16 * P),
        ranks_for(4 * P, 12 * P), ranks_for(8 * P, 8 * P));
  }
  return fmt::format(
      "even batch 1 cannot fit: activations need {} ({} per sample) on top of {} of model states, against {} usable: "
      "recompute them in the backward (checkpointing=blocks), halve them (precision=amp_bf16), or, at a larger batch, split "
      "it into micro-batches (grad_accum)",
      format_bytes(static_cast<std::int64_t>(act)), format_bytes(p.per_sample), format_bytes(p.states.total()),
      format_bytes(static_cast<std::int64_t>(usable)));
}

MemoryEstimate MemoryPrediction::estimate(const Config& config) const {
  MemoryEstimate e;
  e.config = config;
  e.known = known;
  e.why_unknown = why_unknown;
  e.peak = peak;
  e.lo = lo;
  e.hi = hi;
  e.phase = phase;
  e.states = states.total();
  e.activations = activations;
  e.optimizer_transient = optimizer_transient;
  e.per_sample = per_sample;
  e.fits = fits;
  return e;
}

}  // namespace autotune
