#include "tuner/measures/record_index.h"

#include <fmt/format.h>

namespace autotune {

std::string attempt_key(const Config& c, double scale) { return fmt::format("{}@{:g}", c.key(), scale); }

double window_scale(const TrialRecord& r, const MeasureOptions& base) {
  return base.window_min_seconds > 0 ? r.plan.setup.measure.window_min_seconds / base.window_min_seconds : 1.0;
}

void RecordIndex::add(const TrialRecord& r) {
  by_id_[r.id] = &r;
  const std::string key = r.plan.config.key();
  switch (r.kind) {
    case TrialKind::trace:
      traces_.push_back(&r);
      return;  // read for profiles, never measured
    case TrialKind::noise:
      noise_.push_back(&r);
      return;  // read for the noise scale, never measured
    case TrialKind::converge:
      return;  // autotune converge's own journal: never a tune's
    case TrialKind::memory:
      memory_.push_back(&r);
      return;  // read for the memory model, never measured
    case TrialKind::interference:
      interference_.push_back(&r);
      return;  // the baseline beside the other slots' copies: read for the interference ratio, never ranked
    case TrialKind::confirm:
      confirms_[key].push_back(&r);
      return;
    case TrialKind::reference:
      references_[key].push_back(&r);
      return;
    case TrialKind::effect:
      effects_[key].push_back(&r);
      return;
    default:
      break;
  }
  const double scale = window_scale(r, base_);
  attempts_[attempt_key(r.plan.config, scale)].push_back(&r);
  auto [it, first] = position_.emplace(key, measured_.size());
  if (first) {
    measured_.push_back({r.plan.config, scale, r.kind});
    firsts_.push_back(&r);
  }
  measured_[it->second].latest_scale = scale;
}

const TrialRecord* RecordIndex::by_id(std::int64_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

const std::vector<const TrialRecord*>& RecordIndex::get(const Group& g, const std::string& key) {
  static const std::vector<const TrialRecord*> none;
  auto it = g.find(key);
  return it == g.end() ? none : it->second;
}

}  // namespace autotune
