#pragma once
#include <fmt/format.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace autotune {

/// A point in the search space: knob name → value (string form, validated against the catalog).
/// Knobs absent from a Config take their default. Ordered by name so `key()` is canonical.
class Config {
 public:
  Config() = default;

  /// Sets `knob` to `value` after validating both; throws UsageError naming what is wrong.
  Config& set(const std::string& knob, const std::string& value);
  /// Parses "knob=value" (as given to --set); throws UsageError on a malformed assignment.
  Config& set_assignment(const std::string& assignment);

  /// Unsets `knob` (it takes its default again).
  Config& erase(const std::string& knob) {
    values_.erase(knob);
    return *this;
  }
  bool has(const std::string& knob) const { return values_.count(knob) != 0; }
  /// The value of `knob`, or `fallback` when the config does not set it.
  std::string get(const std::string& knob, const std::string& fallback = "") const;
  const std::map<std::string, std::string>& values() const { return values_; }
  bool empty() const { return values_.empty(); }

  /// Canonical text "batch_size=64 threads=1" (sorted by knob); identity of a config in the journal.
  std::string key() const;
  /// Number of knobs set to something other than their default: `defaults` (knob → value, the run's
  /// baseline) where it names the knob, else the catalog's (a knob whose default is "workload" counts as
  /// changed unless `defaults` names it).
  int non_default_count(const std::map<std::string, std::string>& defaults = {}) const;
  /// The default of `knob` in a run: `defaults` (knob → value, the run's baseline) where it names the knob,
  /// else the catalog's (`workload_batch` resolving a "workload" default). The one lookup every "is this
  /// value a change?" question asks (counts, snippets, benchmark names).
  static std::string default_of(const std::string& knob, const std::map<std::string, std::string>& defaults,
                                const std::string& workload_batch = "");
  /// The knobs set to something other than their default in `defaults` (Config::default_of), "log_every=10
  /// optimizer_impl=fused"; "(defaults)" when none: how a config is named to a reader.
  std::string changes_from(const std::map<std::string, std::string>& defaults) const;
  /// The knobs whose value differs from `base`'s, "batch_size=256 threads=2"; "(baseline)" when none.
  std::string diff_key(const Config& base) const;

  bool operator==(const Config& o) const { return values_ == o.values_; }
  bool operator!=(const Config& o) const { return !(*this == o); }
  bool operator<(const Config& o) const { return values_ < o.values_; }

 private:
  std::map<std::string, std::string> values_;
};

inline std::string format_as(const Config& c) { return c.key(); }

/// The values to try per knob, e.g. from `--knobs batch_size=32,64 threads=1,2`.
class KnobSpace {
 public:
  /// Adds (or replaces) `knob` with `values`; each is validated; duplicates are an error.
  KnobSpace& add(const std::string& knob, const std::vector<std::string>& values);
  /// Parses "knob=v1,v2,..." (one CLI token).
  KnobSpace& add_assignment(const std::string& assignment);

  const std::vector<std::pair<std::string, std::vector<std::string>>>& axes() const { return axes_; }
  bool empty() const { return axes_.empty(); }
  /// Number of grid points (product of axis sizes).
  std::size_t grid_size() const;
  /// Every combination, first axis slowest; knobs not in the space are left unset (default).
  std::vector<Config> grid() const;
  /// "batch_size={32,64} threads={1,2}"
  std::string describe() const;

 private:
  std::vector<std::pair<std::string, std::vector<std::string>>> axes_;
};

/// Splits "a,b,c" on commas, trimming spaces; empty items are an error (UsageError naming `what`).
std::vector<std::string> split_list(const std::string& text, const std::string& what);

}  // namespace autotune
