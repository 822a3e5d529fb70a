#pragma once
// What `autotune memory` found (docs/memory.md): per family of knobs, the probes, the model states computed and
// counted, the fitted lines, each listed batch's predicted peak (and, with --check, its measured one), the largest
// batch that fits or why none does; then the misses and the held-out error. Plain data the tuner's memory study
// fills (tuner/memory/study.h); here only the words and the JSON.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "knobs/memory.h"

namespace autotune {

/// One batch of a family: predicted, and with --check measured.
struct MemoryStudyRow {
  std::int64_t batch = 0;
  bool probed = false;  ///< one of the family's probe batches (its error is not a held-out one)
  bool known = false;
  std::string why_unknown;
  std::int64_t predicted = 0, lo = 0, hi = 0;
  std::string phase;
  bool fits = true;
  bool checked = false;  ///< --check: measured under the cap
  std::string status;    ///< the check's trial status ("ok", "oom", …)
  std::optional<std::int64_t> measured;
  std::optional<double> error;  ///< (predicted − measured) ÷ measured, when both are known
};

/// The model states as computed from the parameters and as the worker counted them.
struct MemoryStatesCheck {
  std::int64_t analytic = 0, counted = 0;
  StateBytes parts;  ///< the computed ones, by term
};

struct MemoryStudyFamily {
  std::string family;
  std::vector<std::int64_t> probe_batches;
  int probes = 0;
  double probe_seconds = 0;
  std::string why_unknown;  ///< not predicted at all (no point to fit): the rest is empty
  std::vector<MemoryStatesCheck> states;
  bool fitted = false;  ///< the fitted lines below are known
  std::int64_t activations_intercept = 0, per_sample = 0, optimizer_transient = 0;
  int points = 0;
  double fit_error = 0;
  std::vector<MemoryStudyRow> rows;
  std::int64_t largest_fit = 0, largest_fit_pow2 = 0;  ///< pow2 −1: unknown, 0: none fits
  std::string advice;                                   ///< why no batch fits and what would (when none does)
};

struct MemoryStudy {
  std::string workload;
  bool cuda = false;
  bool capped = false;  ///< --memory-cap given (else the device's own memory)
  std::int64_t capacity = 0;
  double margin = 0.05;
  bool check = false;
  std::vector<MemoryStudyFamily> families;
  std::vector<std::string> misses;
  struct HeldOut {
    std::size_t n = 0;
    double median_abs_error = 0, max_abs_error = 0, worst_under = 0;
  };
  std::optional<HeldOut> held_out;  ///< --check: the batches no probe ran at
  int trials = 0;
};

/// "memory model of gpt-mini on cpu (--memory-cap 2.0 GiB: a counting CPU allocator emulates a device of that size;
/// margin 5%)".
std::string memory_study_header(const MemoryStudy& s);
/// One family's block: its probes, states, fitted lines, the table of batches and the largest that fits.
std::string memory_study_family_text(const MemoryStudyFamily& f, bool check);
/// After the families: the misses and the held-out error.
std::string memory_study_footer(const MemoryStudy& s);
/// `autotune memory --json`.
nlohmann::json memory_study_json(const MemoryStudy& s);

}  // namespace autotune
