#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "knobs/target.h"

namespace autotune {

/// Where a knob makes sense. Checked against TargetInfo before a knob is searched; a knob that does
/// not apply is skipped and reported with `reason`, never silently ignored.
struct Requirement {
  bool cuda = false;
  bool conv_model = false;
  bool image_data = false;
  bool block_model = false;
  bool real_data = false;    ///< needs --data (images or tokens)
  bool image_files = false;  ///< needs --data pointing at an image folder
  bool data_cache = false;   ///< needs --cache
  bool host_data = false;    ///< needs batches made on the host (real data): synthetic data is made on the device
  int min_gpus = 0;
  bool python_trainer = false;  ///< needs the Python worker (torch.compile has no LibTorch counterpart)
  bool cpp_trainer = false;     ///< needs the C++ worker: the Python worker has no mechanism for it (its own decoders)
  /// Reason this requirement is not met on `target`, or nullopt when it is.
  std::optional<std::string> unmet(const TargetInfo& target) const;
};

/// One tunable setting. Values are strings on the wire (plan.json, CLI); `validate` checks them.
struct Knob {
  enum class Type { integer, choice };

  std::string name;
  Type type = Type::choice;
  /// choice: the complete domain, PyTorch's default first.
  /// integer: the values a default search tries (e.g. powers of two).
  std::vector<std::string> values;
  std::int64_t min = 1, max = INT64_MAX;  ///< integer bounds (inclusive)
  std::vector<std::string> words;         ///< integer knobs: non-numeric values also accepted ("default")
  std::string default_value;              ///< the baseline; "workload" = the workload's own default
  std::string applies;                    ///< human-readable applicability ("always", "CUDA + conv")
  Requirement requires_;
  /// Extra requirements of single values (precision=amp_fp16 needs CUDA; fp32 and amp_bf16 do not).
  std::vector<std::pair<std::string, Requirement>> value_requires;
  /// Integer knobs whose usable values depend on the machine (ranks ≤ cores or GPUs): the reason
  /// `value` cannot run on the target, or nullopt.
  std::optional<std::string> (*value_limit)(std::int64_t value, const TargetInfo& target) = nullptr;
  std::string tip;  ///< one line: what it does and when it pays
  /// Expected effect on throughput, 1 = largest: coordinate descent visits knobs in this order.
  int impact_rank = 100;
  /// The commonly recommended setting ("the recipe" the `auto` search tries first): the first of these
  /// values the search space offers; empty = the knob is not part of the recipe.
  std::vector<std::string> recipe;
  /// A data-parallel knob other than `ranks` (bucket sizes, comm hook, …): it means nothing in one
  /// process, so with ranks = 1 it falls back (knobs/resolve.cpp) and reports compare the config
  /// without it (reports/data_parallel.cpp).
  bool needs_ranks = false;

  /// PyTorch 2.11's own default for this setting where it differs by frontend or device: `frontend` "python"
  /// or "libtorch" ("" both), `device` "cuda" or "cpu" ("" both: where the parameters are). The first match
  /// wins; none matching: default_value. Each with the source that says so.
  struct FrontendDefault {
    std::string frontend, device, value, source;
  };
  std::vector<FrontendDefault> frontend_defaults;
  /// Where default_value is PyTorch's default (a file of PyTorch, or why there is no setting to make).
  std::string default_source;

  /// The largest speedup (or slowdown, as its inverse) this knob's mechanism can give on a device, and why: an
  /// effect measured beyond it is re-measured before it is shown (tuner/summary/knob_effects.h). `device` "cuda"
  /// or "cpu" ("" both); a knob without a bound that applies can move throughput by any factor.
  struct EffectBound {
    std::string device;
    double max = 0;
    std::string why;
  };
  std::vector<EffectBound> effect_bounds;
  /// The bound that applies on a CUDA device or not; nullptr when none does.
  const EffectBound* effect_bound(bool cuda) const;

  /// The value a plain PyTorch script of `frontend` (python | libtorch) trains with, on a CUDA device or not,
  /// and its source ("workload" resolved with `workload_default`).
  std::pair<std::string, std::string> pytorch_default(const std::string& frontend, bool cuda,
                                                      const std::string& workload_default = "") const;

  /// Throws UsageError "knob 'NAME': VALUE is not ...; allowed: ..." when `value` is outside the domain.
  void validate(const std::string& value) const;
  /// Human-readable domain: "0, 1, 2" or "integer 1..1024 or default".
  std::string domain_text() const;
  /// Reason this knob does not apply on `target`, or nullopt when it does.
  std::optional<std::string> not_applicable(const TargetInfo& target) const;
  /// Reason `value` of this knob cannot be used on `target` (knob- or value-level), or nullopt.
  std::optional<std::string> value_not_applicable(const std::string& value, const TargetInfo& target) const;
  /// The baseline value ("workload" resolved with `workload_default`).
  std::string baseline(const std::string& workload_default = "") const {
    return default_value == "workload" ? workload_default : default_value;
  }
};

/// Every knob the worker implements. Only knobs whose mechanism really exists in autotune-worker are
/// listed: a knob here that the worker silently ignored would make every result about it a fake.
const std::vector<Knob>& knob_catalog();

/// The knob called `name`; throws UsageError "unknown knob 'X'; known knobs: ... (did you mean 'Y'?)".
const Knob& find_knob(const std::string& name);

std::vector<std::string> knob_names();

}  // namespace autotune
