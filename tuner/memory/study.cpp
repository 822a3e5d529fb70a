#include "tuner/memory/study.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include "knobs/resolve.h"
#include "tuner/memory/model.h"
#include "tuner/memory/probes.h"
#include "tuner/measures/statistics.h"

namespace autotune {

namespace {

/// The configs of the study: the grid of `knobs`, each as it would run here, one per family (batch_size left out).
std::vector<Config> family_configs(const MemoryStudyOptions& o, const std::map<std::string, std::string>& defaults) {
  KnobSpace space;
  for (const auto& k : o.knobs) space.add_assignment(k);
  std::vector<Config> configs;
  std::set<std::string> seen;
  for (const Config& c : space.empty() ? std::vector<Config>{Config{}} : space.grid()) {
    Config eff = resolve(c, o.workload, o.target).effective;
    eff.erase("batch_size");
    if (seen.insert(memory_family(eff, defaults)).second) configs.push_back(eff);
  }
  return configs;
}

/// The family's fitted lines at batch 0 (the intercepts), from its prediction at the smallest probe batch.
void add_fit(MemoryStudyFamily& f, const MemoryModel& model, const Config& c, const MemoryPrediction& p1) {
  f.fitted = true;
  Config c2 = c;
  c2.set("batch_size", std::to_string(2 * p1.batch));
  f.activations_intercept = p1.activations - p1.per_sample * p1.batch;
  f.optimizer_transient = p1.optimizer_transient - (model.predict(c2).optimizer_transient - p1.optimizer_transient);
  f.per_sample = p1.per_sample;
  f.points = p1.points;
  f.fit_error = p1.fit_error;
}

/// Batch `b` of the family of `c`: predicted, and with `check` measured by a probe under the cap (never fitted).
MemoryStudyRow study_row(const MemoryStudyOptions& o, const MemoryModel& model, const Config& c, std::int64_t b, bool probed,
                         const std::function<const TrialRecord&(const TrialPlan&)>& run) {
  Config cb = c;
  cb.set("batch_size", std::to_string(b));
  const MemoryPrediction p = model.predict(cb);
  MemoryStudyRow r;
  r.batch = b;
  r.probed = probed;
  r.known = p.known;
  r.why_unknown = p.known ? "" : p.why_unknown;
  r.predicted = p.peak;
  r.lo = p.lo;
  r.hi = p.hi;
  r.phase = p.phase;
  r.fits = p.fits;
  if (!o.check) return r;
  TrialPlan check = memory_probe_plan(o.setup, cb, b);  // measured under the cap, never added to the fit
  check.setup.memory_cap = o.setup.memory_cap;
  const TrialRecord& rec = run(check);
  r.checked = true;
  r.status = to_string(rec.result.status);
  if (rec.result.status == TrialStatus::ok && rec.result.memory) {
    r.measured = rec.result.memory->peak();
    if (p.known) r.error = static_cast<double>(p.peak - *r.measured) / static_cast<double>(*r.measured);
  }
  return r;
}

/// The largest batch predicted to fit: the largest power of two (−1 unknown, 0 none), then the largest integer
/// between it and twice it.
void add_largest_fit(MemoryStudyFamily& f, const MemoryModel& model, const Config& c) {
  const std::int64_t pow2 = model.largest_fitting(c, {}, 1 << 20);
  std::int64_t exact = 0;
  if (pow2 > 0) {
    std::int64_t lo = pow2, hi = 2 * pow2;
    while (hi - lo > 1) {
      const std::int64_t mid = (lo + hi) / 2;
      Config cm = c;
      cm.set("batch_size", std::to_string(mid));
      (model.predict(cm).fits ? lo : hi) = mid;
    }
    exact = lo;
  }
  f.largest_fit = exact;
  f.largest_fit_pow2 = pow2;
  if (pow2 == 0) f.advice = model.cannot_fit_advice(c);
}

}  // namespace

MemoryStudy run_memory_study(const MemoryStudyOptions& o, const std::function<const TrialRecord&(const TrialPlan&)>& run,
                             const std::function<void(const MemoryStudyFamily&)>& on_family) {
  std::map<std::string, std::string> defaults;
  defaults["batch_size"] = std::to_string(o.workload.default_batch_size);
  MemoryModelOptions mo;
  mo.margin = o.margin;
  mo.capacity_bytes = o.setup.memory_cap.empty() ? 0 : parse_size(o.setup.memory_cap, "--memory-cap");
  MemoryModel model(mo, defaults);
  MemoryStudy s;
  s.workload = o.workload.name;
  s.cuda = o.target.cuda;
  s.capped = !o.setup.memory_cap.empty();
  s.capacity = mo.capacity_bytes;
  s.margin = o.margin;
  s.check = o.check;
  const std::vector<Config> configs = family_configs(o, defaults);
  std::vector<std::int64_t> batches = o.batches;
  if (batches.empty())
    for (std::int64_t b = 1; b <= 4 * std::max<std::int64_t>(64, o.workload.default_batch_size); b *= 2) batches.push_back(b);
  std::sort(batches.begin(), batches.end());
  const std::int64_t smallest = o.probe_smallest > 0 ? o.probe_smallest : std::max<std::int64_t>(4, o.workload.default_batch_size / 4);
  const std::set<std::int64_t> probed_set = [&] {
    const auto p = probe_batches(smallest);
    return std::set<std::int64_t>(p.begin(), p.end());
  }();
  int trials = 0;
  const auto counted = [&](const TrialPlan& p) -> const TrialRecord& {
    ++trials;
    return run(p);
  };
  std::vector<double> held_out;
  double worst_under = 0;
  for (const Config& c : configs) {
    MemoryStudyFamily f;
    f.family = memory_family(c, defaults);
    const auto t0 = std::chrono::steady_clock::now();
    f.probes = probe_family(model, c, o.setup, smallest, counted);
    f.probe_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    f.probe_batches.assign(probed_set.begin(), probed_set.end());
    Config c1 = c;
    c1.set("batch_size", std::to_string(*probed_set.begin()));
    const MemoryPrediction p1 = model.predict(c1);
    if (!p1.known && p1.points == 0) {
      f.why_unknown = p1.why_unknown;
    } else {
      for (const auto& sc : model.states_checks())
        if (sc.family == f.family) f.states.push_back({sc.analytic, sc.counted, p1.states});
      if (p1.points > 0) add_fit(f, model, c, p1);
      for (std::int64_t b : batches) {
        f.rows.push_back(study_row(o, model, c, b, probed_set.count(b) > 0, counted));
        const MemoryStudyRow& r = f.rows.back();
        if (r.error && !r.probed) {
          held_out.push_back(std::abs(*r.error));
          if (*r.measured > r.hi) worst_under = std::max(worst_under, static_cast<double>(*r.measured - r.hi) / static_cast<double>(*r.measured));
        }
      }
      add_largest_fit(f, model, c);
    }
    on_family(f);
    s.families.push_back(std::move(f));
  }
  for (const auto& m : model.misses()) s.misses.push_back(m.what);
  if (!held_out.empty())
    s.held_out = MemoryStudy::HeldOut{held_out.size(), median(held_out), *std::max_element(held_out.begin(), held_out.end()), worst_under};
  s.trials = trials;
  return s;
}

}  // namespace autotune
