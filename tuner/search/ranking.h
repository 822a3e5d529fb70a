#pragma once
// Ranking configs: the one home of "which config is better". Two objectives (docs/time-to-train.md):
//  - throughput: samples/s, the number every trial measures;
//  - time (the default): predicted time to the same loss. A config at the user's global batch B0 trains
//    the same maths, so its time ratio is its throughput ratio. A config at another global batch B does
//    not: past the noise scale B̄ each sample does less (McCandlish et al. 2018), and
//        T_B0 / T_B = (X_B / X_B0) · (B0 + B̄) / (B + B̄).
//    So a config is ranked by its score X · (B0 + B̄)/(B + B̄) — samples/s at the user's batch's worth.
//    Without a usable B̄ (synthetic data) only configs at B0 can be ranked; the others are listed by
//    throughput, unranked.
// The search (History::best, the strategies), the choice of candidates to confirm, the winner and the
// pricing of a changed batch all read this file.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "knobs/record.h"
#include "reports/summary.h"
#include "tuner/search/objective_kind.h"

namespace autotune {

/// batch_size (as resolved) × grad_accum × ranks of `c`.
std::int64_t global_batch(const Config& c, std::int64_t resolved_batch);

class Objective {
 public:
  using Kind = ObjectiveKind;
  /// Today's ranking before time existed: samples/s, every config rankable.
  Objective() = default;
  Objective(Kind kind, std::int64_t user_batch, NoiseScaleSummary noise)
      : kind_(kind), user_batch_(user_batch), noise_(std::move(noise)) {}

  Kind kind() const { return kind_; }
  std::int64_t user_batch() const { return user_batch_; }
  const NoiseScaleSummary& noise() const { return noise_; }
  /// Ranks by predicted time: the time objective with a usable noise scale.
  bool by_time() const { return kind_ == Kind::time && noise_.usable; }
  /// The time objective holds the user's batch: configs at another one are answer (b).
  bool holds_user_batch() const { return kind_ == Kind::time && user_batch_ > 0; }
  bool at_user_batch(const ConfigSummary& s) const { return s.global_batch == user_batch_; }

  /// (B0 + B̄) / (B + B̄): the samples a config at global batch B needs per sample at B0 (≤ 1 for B > B0).
  double efficiency(std::int64_t B, double b_noise) const;
  /// The number configs are ranked by: samples/s (throughput), or samples/s × efficiency at the
  /// estimated B̄ (time). Without a usable B̄, samples/s (the batch search still explores by it).
  double score(const ConfigSummary& s) const;
  /// A compiled config pays its compile once (ConfigSummary::compile_seconds): its share of the run, as the factor its
  /// samples/s `x` keep — 1 / (1 + C·x / W) over a run of W samples (the run length the time objective prices, when
  /// known), else over an hour of training at its own speed, H / (H + C). 1 without a compile.
  double compile_factor(const ConfigSummary& s, double x) const;
  /// The hour a compile is priced over when the run's length is unknown.
  static constexpr double kCompileHorizonSeconds = 3600;
  /// score's 95% CI: the throughput CI scaled alike.
  double score_lo(const ConfigSummary& s) const;
  double score_hi(const ConfigSummary& s) const;
  /// Whether `s` may be ranked (and win): every config under throughput; under time, configs at the
  /// user's batch, and at another batch only with a usable B̄.
  bool rankable(const ConfigSummary& s) const;
  /// The band of B̄ a changed batch must win across: [½, 2]× the estimate, or its interval when wider
  /// (hi = ∞ when only a lower bound is known).
  std::pair<double, double> band() const;

 private:
  /// `x` samples/s of `s`, its compile paid (compile_factor).
  double priced(const ConfigSummary& s, double x) const;
  Kind kind_ = Kind::throughput;
  std::int64_t user_batch_ = 0;
  NoiseScaleSummary noise_;
};

/// What the search knows: the verdict of every config measured so far, keyed by Config::key(), and
/// the objective it is ranked by.
class History {
 public:
  void add(const ConfigSummary& s) { by_key_[s.config.key()] = s; }
  /// `proposed` runs as `runs_as` (resolve() folded it): find(proposed) answers with runs_as's verdict,
  /// so a strategy sees it measured and moves on.
  void alias(const Config& proposed, const Config& runs_as) { alias_[proposed.key()] = runs_as.key(); }
  /// A config decided without running it (the memory model ruled it out): find() answers with `s` (not
  /// eligible), so a strategy moves on; nothing else sees it — it has no trial (all(), best()).
  void add_not_run(const ConfigSummary& s) { not_run_[s.config.key()] = s; }
  /// A config whose trial is running in a parallel slot (tuner/exec/executor.h): find() answers with a
  /// placeholder (`in_flight`, not eligible, at `window_scale`), so a strategy does not propose it again and
  /// can tell that a decision would read a result not in yet (it then waits: Proposal::wait). all() and
  /// best() never see it.
  void mark_in_flight(const Config& c, double window_scale);
  void clear_in_flight(const Config& c) { in_flight_.erase(c.key()); }
  bool any_in_flight() const { return !in_flight_.empty(); }
  const ConfigSummary* find(const Config& c) const {
    auto a = alias_.find(c.key());
    const std::string key = a == alias_.end() ? c.key() : a->second;
    if (auto f = in_flight_.find(key); f != in_flight_.end()) return &f->second;
    auto it = by_key_.find(key);
    if (it != by_key_.end()) return &it->second;
    auto nr = not_run_.find(key);
    return nr == not_run_.end() ? nullptr : &nr->second;
  }
  /// The eligible, rankable config with the highest score; nullptr when there is none.
  const ConfigSummary* best() const;
  /// Whether `s` may lead (eligible and rankable).
  bool leads(const ConfigSummary& s) const { return s.eligible && objective_.rankable(s); }
  double score(const ConfigSummary& s) const { return objective_.score(s); }
  const std::map<std::string, ConfigSummary>& all() const { return by_key_; }
  void set_objective(Objective o) { objective_ = std::move(o); }
  const Objective& objective() const { return objective_; }

 private:
  std::map<std::string, ConfigSummary> by_key_;
  std::map<std::string, ConfigSummary> not_run_;
  std::map<std::string, ConfigSummary> in_flight_;
  std::map<std::string, std::string> alias_;  ///< proposed key → the key it runs as
  Objective objective_;
};

/// Eligible, rankable candidates by score, best first (ablation configs are never candidates).
std::vector<const ConfigSummary*> ranked_candidates(const History& h);

/// Those of `configs` that may lead (History::leads), best score first; equal scores keep their order. The
/// strategies rank what they compare (a coordinate beam, a halving round) with it.
std::vector<const ConfigSummary*> ranked_among(const History& h, std::vector<const ConfigSummary*> configs);

/// The positions of `scores`, highest first; equal scores keep their order (a rung of asynchronous halving ranks
/// the scores it recorded with it).
std::vector<std::size_t> best_first(const std::vector<double>& scores);

/// The `top` configs the confirmation re-runs: under the time objective the best at the user's batch
/// (answer a) and the best at another batch (answer b, when time ranks it) come first, then the rest by score.
std::vector<const ConfigSummary*> confirmation_candidates(const History& h, int top);

/// The winner among eligible, rankable `configs`: highest score; when others' score CIs overlap the best
/// one's, prefer fewer non-default knobs, then lower peak memory (and `note` says so). -1 when none.
int choose_winner(const std::vector<ConfigSummary>& configs, const std::map<std::string, std::string>& workload_defaults,
                  std::string& note, const Objective& objective = {});

/// Answer (b) priced against answer (a): throughput ratio `x_b / x_a` (both from the same interleaved
/// rounds when they ran) and the predicted time ratio at the estimate and at both ends of the band;
/// `beats_a` when it is faster at both ends. Needs objective.by_time().
TimeAnswer price_changed_batch(const Objective& o, int config, std::int64_t batch, double x_b, double x_a);

/// A config ÷ the baseline in the interleaved rounds: the ratio of medians and its 95% bootstrap interval.
struct RoundsRatio {
  double value = 0, lo = 0, hi = 0;
};
/// What the winner is chosen among, each list as the summary holds it.
struct WinnerCandidates {
  const std::vector<ConfigSummary>& configs;    ///< every measured config; the decision's indices are into it
  const std::vector<ConfigSummary>& confirmed;  ///< the candidates that confirmed (all when none did), as measured in the confirmation
  const std::vector<ConfigSummary>& rerun;      ///< every candidate the confirmation ran, as measured there
  int baseline;                                 ///< PyTorch's defaults: index into configs
  std::function<bool(const Config&)> in_rounds;        ///< whether the interleaved rounds ran `c`
  std::function<double(const Config&)> rounds_median;  ///< `c`'s median samples/s in those rounds (0: none ran fine)
  /// `c` ÷ the baseline in those rounds, samples/s, with its 95% interval; empty when either side did not run there.
  std::function<std::optional<RoundsRatio>(const Config&)> rounds_ratio;
  /// `num` ÷ `den` in samples/s, paired round by round: the geometric mean over the rounds both ran fine of the ratio
  /// of their runs' medians (tuner/measures/statistics.h, paired_ratio; 0: no such round). A ratio of medians pooled
  /// over rounds can exceed every round's own (a 1.19× from rounds of 1.145× and 1.007×).
  std::function<double(const Config& num, const Config& den)> paired_ratio;
};
/// The pick, with the time objective's two answers.
struct Decision {
  int winner = -1;          ///< index into configs; -1 when nothing is picked
  std::string winner_note;  ///< why the pick is what it is when that is not simply the fastest (a tie-break, (b) not winning across the band, (c))
  int a = -1;               ///< answer (a): the best config at the user's global batch
  TimeAnswer b;             ///< answer (b): the best at another global batch, priced against (a)
  std::string time_note;    ///< why (b) is listed unranked ("" when time ranks it)
  int indistinct = -1;      ///< the candidate the defaults kept their place against (its interval reached 1×), or -1
};
/// The winner among the confirmed candidates (choose_winner), and under the time objective (o.holds_user_batch):
///  (a) the best confirmed config at the user's global batch — else the best the confirmation ran there (a host that
///      drifted between search and confirmation can leave even the baseline "not reproduced"), else the best measured
///      there;
///  (b) likewise at another global batch, priced by predicted time to the same loss when the noise scale is usable
///      (both from the interleaved rounds when both ran there, else both from the search), else the fastest stable
///      config at another batch, listed unranked; a winner at another batch stays only when it is (b) and wins across
///      the whole band of noise scales, else the pick is (a);
///  (c) never a winner (or an answer (a)) measured slower than PyTorch's defaults in the same interleaved rounds: then
///      the defaults are the answer — also when the baseline's own windows were noisy or drifting (the host's doing,
///      not a reason to crown what it outran).
/// `lr` is the user's learning rate (the base of (b)'s advice).
Decision decide_winner(const Objective& o, const WinnerCandidates& in, const std::map<std::string, std::string>& defaults, double lr);

/// The learning rate to start from at global batch `B` when the user's is `lr` at B0 (AdaScale's
/// gain r = (B/B0)(B̄ + B0)/(B̄ + B); SGD × r, Adam-family × √r), at the estimated B̄.
LrAdvice lr_advice(const Objective& o, std::int64_t B, double lr);


}  // namespace autotune
