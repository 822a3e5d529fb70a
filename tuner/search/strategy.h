#pragma once
#include <map>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "knobs/config.h"
#include "knobs/record.h"
#include "tuner/search/ranking.h"

namespace autotune {

/// One config to measure. `window_scale` lengthens the measured windows (successive halving).
struct Proposal {
  Config config;
  double window_scale = 1.0;
  std::string phase;  ///< for progress lines and the report: "grid", "batch size", "coordinate: precision", …
  /// Not a config: the next decision reads a result still in flight (a parallel run); ask again when a
  /// trial ends. Never returned when nothing is in flight (History::any_in_flight).
  bool wait = false;
  static Proposal waiting() {
    Proposal p;
    p.wait = true;
    return p;
  }
};

/// A search strategy, ask/tell: `next` proposes a config (or nullopt when done), the tune loop measures
/// it and records the verdict in the History, then asks again. Strategies never run anything
/// themselves, so they are tested against an in-process objective. In a parallel run the loop asks while
/// slots are free: configs in flight are in the History as placeholders (ConfigSummary::in_flight), and a
/// strategy whose next step depends on one of their results answers Proposal::waiting().
class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;
  virtual std::optional<Proposal> next(const History& h) = 0;
  /// Configs it still meant to measure (reported as "not explored" when the budget ends).
  virtual std::vector<Config> pending(const History& h) const = 0;
};

struct StrategyOptions {
  std::string name = "grid";   ///< grid | random | coordinate | halving | auto
  std::uint64_t seed = 0;      ///< random: sampling order
  int max_trials = 0;          ///< random: configs to sample (0 = 1/3 of the grid, at least 4)
  int halving_eta = 2;         ///< halving: keep the top 1/eta each round, windows × eta
  int slots = 1;               ///< trials in flight at once: halving is asynchronous (ASHA) when > 1
  double batch_margin = 0.03;  ///< batch search: a doubling must gain ≥ 3% to continue
  std::int64_t max_batch = 1 << 14;
  std::int64_t effective_batch = 0;  ///< > 0: hold micro-batch × grad_accum at this value
  /// The time objective: a batch size that cannot hold effective_batch is still a config (at another
  /// global batch, answer b) instead of being skipped.
  bool other_batches = false;
  /// The batch sizes the user listed in the space (ascending): the batch search walks these instead of
  /// open-ended powers of two, so auto never measures a size the user left out. Empty: powers of two.
  std::vector<std::int64_t> batch_values;
  /// The memory model (tuner/memory/model.h), when the run has one: the largest of `candidates` that
  /// `config`'s family is predicted to fit (0: none, -1: unknown). The batch search starts there.
  std::function<std::int64_t(const Config& config, const std::vector<std::int64_t>& candidates)> largest_fitting;
};

/// The strategy called `opts.name` over `space`, starting from `baseline` (PyTorch's defaults, already
/// measured first by the tune loop). Throws UsageError for an unknown name.
std::unique_ptr<Strategy> make_strategy(const StrategyOptions& opts, const KnobSpace& space, const Config& baseline,
                                        const std::map<std::string, std::string>& workload_defaults);

/// Knobs in order of expected impact on throughput (Knob::impact_rank; coordinate descent visits them in this order).
const std::vector<std::string>& impact_order();

/// The commonly recommended settings that apply in `space` ("the recipe", Knob::recipe in the catalog):
/// AMP, fused AdamW, channels_last, cudnn.benchmark, pinned memory, set_to_none, sync-free logging —
/// each only if the space offers it (and, for a data-parallel knob, only when `baseline` has ranks > 1). The local
/// searches (coordinate, neighbours) likewise leave a data-parallel knob alone in a one-rank config.
Config recommended_recipe(const KnobSpace& space, const Config& baseline);

}  // namespace autotune
