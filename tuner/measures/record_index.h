#pragma once
// The journal's trial records grouped the way the tune loop and the run summary read them: the
// attempts of a config at a window length (baseline, search, re-measures and ablations), its
// confirmation runs, its fp32 reference runs, its effect-round runs, and traced trials apart (never measured).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "knobs/record.h"

namespace autotune {

/// Journal attempts of a config at a window scale ("batch_size=64@1"): confirm and reference runs are kept apart.
std::string attempt_key(const Config& c, double scale);

/// Window scale of a record relative to the run's base window length (1 unless halving lengthened it).
double window_scale(const TrialRecord& r, const MeasureOptions& base);

class RecordIndex {
 public:
  /// `base`: the run's measurement options (window scales are relative to its window length).
  explicit RecordIndex(const MeasureOptions& base) : base_(base) {}

  /// Indexes `r`, which must outlive the index (records in a std::deque or a fixed vector).
  void add(const TrialRecord& r);

  /// Attempts of `c` at `scale`, in completion order (empty when none).
  const std::vector<const TrialRecord*>& attempts(const Config& c, double scale) const {
    return get(attempts_, attempt_key(c, scale));
  }
  const std::vector<const TrialRecord*>& confirms(const Config& c) const { return get(confirms_, c.key()); }
  const std::vector<const TrialRecord*>& references(const Config& c) const { return get(references_, c.key()); }
  /// Runs of `c` in the effect rounds (the winner, the baseline, the winner with one knob reverted), in order.
  const std::vector<const TrialRecord*>& effects(const Config& c) const { return get(effects_, c.key()); }
  const std::vector<const TrialRecord*>& traces() const { return traces_; }
  /// Noise-scale trials (never measured for throughput), in completion order.
  const std::vector<const TrialRecord*>& noise_trials() const { return noise_; }
  /// Memory probes (never measured for throughput), in completion order.
  const std::vector<const TrialRecord*>& memory_probes() const { return memory_; }
  /// Parallel runs: the baseline's copies run in every slot at once (TrialKind::interference).
  const std::vector<const TrialRecord*>& interference() const { return interference_; }
  /// The record with journal id `id`, or nullptr.
  const TrialRecord* by_id(std::int64_t id) const;

  /// Configs with attempts, in the order they were first measured, each with its latest window
  /// scale and the kind of its first attempt (baseline, search or ablation).
  struct Measured {
    Config config;
    double latest_scale = 1;
    TrialKind first_kind = TrialKind::search;
  };
  const std::vector<Measured>& measured() const { return measured_; }
  /// Each measured config's first attempt, in the order the configs were first measured (host_noise reads these).
  const std::vector<const TrialRecord*>& first_attempts() const { return firsts_; }
  bool was_measured(const Config& c) const { return position_.count(c.key()) != 0; }

 private:
  using Group = std::map<std::string, std::vector<const TrialRecord*>>;
  static const std::vector<const TrialRecord*>& get(const Group& g, const std::string& key);
  MeasureOptions base_;
  Group attempts_, confirms_, references_, effects_;
  std::vector<const TrialRecord*> traces_, noise_, memory_, interference_;
  std::map<std::int64_t, const TrialRecord*> by_id_;
  std::vector<Measured> measured_;
  std::vector<const TrialRecord*> firsts_;
  std::map<std::string, std::size_t> position_;  ///< config key → index into measured_
};

}  // namespace autotune
