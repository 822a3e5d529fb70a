#include "tuner/memory/gate.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "tuner/memory/probes.h"

namespace autotune {

MemoryGate::MemoryGate(MemoryModelOptions options, std::map<std::string, std::string> defaults, std::int64_t smallest_batch,
                       MemoryReport report)
    : model_(options, defaults), defaults_(std::move(defaults)), smallest_(smallest_batch), report_(std::move(report)) {
  report_.on = true;
  report_.capacity = options.capacity_bytes;
  report_.margin = options.margin;
}

std::string MemoryGate::probe(const Config& c, const TrialSetup& setup,
                              const std::function<const TrialRecord&(const TrialPlan&)>& run) {
  if (!model_.needs_probes(c)) return "";
  const auto t0 = std::chrono::steady_clock::now();
  const int n = probe_family(model_, c, setup, smallest_, run);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  report_.probes += n;
  report_.probe_seconds += seconds;
  const std::string family = memory_family(c, defaults_);
  for (const auto& sc : model_.states_checks())
    if (sc.family == family)
      report_.states_checks.push_back(fmt::format("{}: computed {} {} counted {}", sc.family, format_bytes(sc.analytic),
                                                  sc.analytic == sc.counted ? "=" : "≠", format_bytes(sc.counted)));
  if (report_.advice.empty()) report_.advice = model_.cannot_fit_advice(c);
  const MemoryPrediction pr = model_.predict(c);
  return fmt::format("memory    {} probes of {} ({:.1f} s): {}", n, family, seconds,
                     pr.known ? fmt::format("{} + {} per sample above the model states of {}",
                                            format_bytes(pr.activations - pr.per_sample * pr.batch), format_bytes(pr.per_sample),
                                            format_bytes(pr.states.total()))
                              : "not predicted: " + pr.why_unknown);
}

MemoryGate::Decision MemoryGate::decide(const Config& c) {
  const MemoryPrediction p = model_.predict(c);
  Decision d;
  d.estimate = p.estimate(c);
  d.batch = p.batch;
  d.skip = !p.fits && (p.known || !p.oom_seen.empty());
  if (d.skip)
    d.estimate.reason =
        !p.oom_seen.empty()
            ? fmt::format("{}: a larger batch of the same family will not fit either", p.oom_seen)
            : fmt::format("predicted peak {} [{}, {}] ({}) > {} usable ({} less the {:.0f}% margin)", format_bytes(p.peak),
                          format_bytes(p.lo), format_bytes(p.hi), p.phase,
                          format_bytes(static_cast<std::int64_t>(p.capacity * (1 - model_.options().margin))),
                          format_bytes(p.capacity), 100 * model_.options().margin);
  auto& pred = report_.predicted;  // one decision per config (a resumed run decides again)
  pred.erase(std::remove_if(pred.begin(), pred.end(), [&](const MemoryEstimate& x) { return x.config == c; }), pred.end());
  pred.push_back(d.estimate);
  return d;
}

std::vector<std::string> MemoryGate::add(const TrialRecord& rec) {
  const std::size_t before = model_.misses().size();
  model_.add(rec);
  std::vector<std::string> out;
  for (std::size_t i = before; i < model_.misses().size(); ++i) {
    report_.misses.push_back(model_.misses()[i].what);
    out.push_back(model_.misses()[i].what);
  }
  return out;
}

}  // namespace autotune
