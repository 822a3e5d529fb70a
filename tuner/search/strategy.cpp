#include "tuner/search/strategy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "knobs/did_you_mean.h"
#include "knobs/error.h"
#include "knobs/knob.h"

namespace autotune {

const std::vector<std::string>& impact_order() {
  static const std::vector<std::string> order = [] {
    std::vector<const Knob*> knobs;
    for (const Knob& k : knob_catalog()) knobs.push_back(&k);
    std::stable_sort(knobs.begin(), knobs.end(), [](const Knob* a, const Knob* b) { return a->impact_rank < b->impact_rank; });
    std::vector<std::string> names;
    for (const Knob* k : knobs) names.push_back(k->name);
    return names;
  }();
  return order;
}

namespace {

bool offers(const KnobSpace& s, const std::string& knob, const std::string& value) {
  for (const auto& [k, vs] : s.axes())
    if (k == knob) return std::find(vs.begin(), vs.end(), value) != vs.end();
  return false;
}

using Axes = std::vector<std::pair<std::string, std::vector<std::string>>>;

/// Whether changing `knob` can matter for `c`: a data-parallel knob (Knob::needs_ranks) does nothing with one rank,
/// so a local search does not propose it there (it would only be folded back into `c` and listed as a fallback).
bool applies_to(const std::string& knob, const Config& c) {
  if (!find_knob(knob).needs_ranks) return true;
  try {
    return std::stoll(c.get("ranks", "1")) > 1;
  } catch (const std::exception&) {
    return true;
  }
}

/// The space's knobs minus `skip`, in order of expected impact (knobs without a rank last, in space order).
Axes ordered_axes(const KnobSpace& space, const std::vector<std::string>& skip) {
  Axes axes;
  const auto skipped = [&](const std::string& k) { return std::find(skip.begin(), skip.end(), k) != skip.end(); };
  for (const auto& k : impact_order())
    for (const auto& [name, vs] : space.axes())
      if (name == k && !skipped(k)) axes.emplace_back(name, vs);
  for (const auto& [name, vs] : space.axes())
    if (std::find(impact_order().begin(), impact_order().end(), name) == impact_order().end() && !skipped(name))
      axes.emplace_back(name, vs);
  return axes;
}

/// Whether `c` is a config a local search from `start` over `axes` builds: it sets the same knobs, and
/// each differs from start's value only by one of its axis's values.
bool reachable(const Config& c, const Config& start, const Axes& axes) {
  for (const auto& [k, v] : c.values()) {
    if (start.get(k) == v) continue;
    bool ours = false;
    for (const auto& [name, vs] : axes)
      if (name == k && std::find(vs.begin(), vs.end(), v) != vs.end()) ours = true;
    if (!ours) return false;
  }
  for (const auto& [k, v] : start.values())
    if (!c.has(k)) return false;
  return true;
}

/// A fixed list of proposals, in order (grid and random).
class ListStrategy : public Strategy {
 public:
  ListStrategy(std::string name, std::vector<Config> configs) : name_(std::move(name)), configs_(std::move(configs)) {}
  std::string name() const override { return name_; }
  std::optional<Proposal> next(const History& h) override {
    for (const auto& c : configs_)
      if (!h.find(c)) return Proposal{c, 1.0, name_};
    return std::nullopt;
  }
  std::vector<Config> pending(const History& h) const override {
    std::vector<Config> out;
    for (const auto& c : configs_)
      if (!h.find(c)) out.push_back(c);
    return out;
  }

 private:
  std::string name_;
  std::vector<Config> configs_;
};

/// One knob at a time, in order of expected impact: try each value with every other knob at the best
/// config so far, keep the best, go to the next knob; a second pass runs when the first improved.
class CoordinateStrategy : public Strategy {
 public:
  CoordinateStrategy(const KnobSpace& space, Config start, std::vector<std::string> skip = {}, int passes = 2)
      : start_(std::move(start)), axes_(ordered_axes(space, skip)), passes_(passes) {}
  std::string name() const override { return "coordinate"; }

  std::optional<Proposal> next(const History& h) override {
    while (pass_ < passes_) {
      if (!pass_start_) pass_start_ = current(h);
      for (; axis_ < axes_.size(); ++axis_) {
        // Each knob from the best config so far (earlier knobs' winners included).
        const Config cur = current(h);
        const auto& [knob, values] = axes_[axis_];
        if (!applies_to(knob, cur)) continue;
        for (const auto& v : values) {
          Config c = cur;
          c.set(knob, v);
          if (!h.find(c)) return Proposal{c, 1.0, "coordinate: " + knob};
        }
        // The next knob starts from this one's winner: every value's result must be in.
        if (h.any_in_flight()) return Proposal::waiting();
      }
      // A pass is over: another runs when it moved the best config (a knob's best value can depend on
      // a knob swept after it). Compared with where the pass started, not with the last knob's start:
      // by the time a knob's values are all measured, the best config already includes its winner.
      const bool improved = current(h) != *pass_start_;
      pass_start_.reset();
      if (!improved) break;
      ++pass_;
      axis_ = 0;
    }
    pass_ = passes_;
    return std::nullopt;
  }

  std::vector<Config> pending(const History& h) const override {
    std::vector<Config> out;
    const Config cur = current(h);
    for (size_t a = axis_; a < axes_.size(); ++a) {
      if (!applies_to(axes_[a].first, cur)) continue;
      for (const auto& v : axes_[a].second) {
        Config c = cur;
        c.set(axes_[a].first, v);
        if (!h.find(c)) out.push_back(c);
      }
    }
    return out;
  }

 private:
  /// The best eligible config that differs from start_ only along axes already swept (incl. start_).
  Config current(const History& h) const {
    Config best = start_;
    const ConfigSummary* bs = h.find(start_);
    double best_score = bs && h.leads(*bs) ? h.score(*bs) : -1;
    for (const auto& [key, s] : h.all()) {
      if (!h.leads(s) || h.score(s) <= best_score) continue;
      if (reachable(s.config, start_, axes_)) {
        best = s.config;
        best_score = h.score(s);
      }
    }
    return best;
  }
  Config start_;
  Axes axes_;
  size_t axis_ = 0;
  int pass_ = 0, passes_;
  std::optional<Config> pass_start_;  ///< the best config when the current pass began
};

/// Local search over a beam of leaders: every unmeasured one-knob neighbour of the best `beam_min`
/// eligible configs, and of up to `beam_max` in all whose median is within the host's noise of the best
/// (`noise_factor` × the median window IQR/median of the eligible configs), the best's first, until all
/// are measured (or `max_new` configs were proposed). On a noisy host a single trial can rank two configs
/// several % apart either way, and one-knob-at-a-time descent then walks on from the wrong one and never
/// visits the optimum two knobs away (the search study, docs/search.md: resnet18's amp + fused +
/// contiguous); the neighbours of the configs one trial cannot tell from the leader cover that step.
class NeighbourhoodStrategy : public Strategy {
 public:
  NeighbourhoodStrategy(const KnobSpace& space, Config start, const std::vector<std::string>& skip, int beam_min,
                        int beam_max, double noise_factor)
      : start_(std::move(start)), beam_min_(beam_min), beam_max_(beam_max), noise_factor_(noise_factor),
        axes_(ordered_axes(space, skip)) {
    std::size_t per_config = 0;
    for (const auto& a : axes_) per_config += a.second.size() - 1;
    // Bounds a beam that noise keeps moving: every leader's neighbourhood and one more. (3 × per_config, with a
    // beam of up to four, cut the stage short in some seeds of the search study: docs/search.md.)
    max_new_ = static_cast<int>((beam_max_ + 1) * per_config);
  }
  std::string name() const override { return "neighbours"; }
  std::optional<Proposal> next(const History& h) override {
    // Out of proposals: done, unless a result still in flight moves the leaders.
    const auto done = [&]() -> std::optional<Proposal> {
      if (h.any_in_flight()) return Proposal::waiting();
      return std::nullopt;
    };
    if (proposed_ >= max_new_) return done();
    std::vector<Proposal> todo = unmeasured(h);
    if (todo.empty()) return done();
    ++proposed_;
    return std::move(todo.front());
  }
  std::vector<Config> pending(const History& h) const override {
    std::vector<Config> out;
    for (const auto& p : unmeasured(h)) out.push_back(p.config);
    return out;
  }

 private:
  std::vector<Config> leaders(const History& h) const {
    std::vector<const ConfigSummary*> reached;
    for (const auto& [key, s] : h.all())
      if (reachable(s.config, start_, axes_)) reached.push_back(&s);
    const std::vector<const ConfigSummary*> ok = ranked_among(h, std::move(reached));
    // The host's window spread, as the eligible configs show it (their median IQR/median; for an even count
    // the upper middle one, not statistics.h's interpolated median(): docs/search.md's figures were measured so).
    std::vector<double> iqr;
    for (const ConfigSummary* s : ok) iqr.push_back(s->rel_iqr);
    double typical_iqr = 0;
    if (!iqr.empty()) {
      std::nth_element(iqr.begin(), iqr.begin() + static_cast<std::ptrdiff_t>(iqr.size() / 2), iqr.end());
      typical_iqr = iqr[iqr.size() / 2];
    }
    std::vector<Config> out;
    for (const ConfigSummary* s : ok) {
      const int n = static_cast<int>(out.size());
      const bool within_noise = h.score(*s) >= h.score(*ok.front()) * (1 - noise_factor_ * typical_iqr);
      if (n >= beam_max_ || (n >= beam_min_ && !within_noise)) break;
      out.push_back(s->config);
    }
    if (out.empty()) out.push_back(start_);
    return out;
  }
  /// The leaders' unmeasured neighbours, the best leader's first, each labelled with the knob it changes.
  std::vector<Proposal> unmeasured(const History& h) const {
    std::vector<Proposal> out;
    for (const Config& l : leaders(h))
      for (const auto& [knob, values] : axes_) {
        if (!applies_to(knob, l)) continue;
        for (const auto& v : values) {
          Config c = l;
          c.set(knob, v);
          if (h.find(c) || std::any_of(out.begin(), out.end(), [&](const Proposal& p) { return p.config == c; })) continue;
          out.push_back(Proposal{c, 1.0, "neighbours: " + knob});
        }
      }
    return out;
  }
  Config start_;
  int beam_min_, beam_max_;
  double noise_factor_;
  Axes axes_;
  int proposed_ = 0, max_new_ = 0;
};

/// Successive halving: measure every candidate, keep the best 1/eta (eligible, by median), measure
/// the survivors again with windows eta× longer, until one is left.
class HalvingStrategy : public Strategy {
 public:
  HalvingStrategy(std::vector<Config> candidates, int eta) : alive_(std::move(candidates)), eta_(std::max(2, eta)) {}
  std::string name() const override { return "halving"; }
  std::optional<Proposal> next(const History& h) override {
    while (true) {
      for (const auto& c : alive_)
        if (!measured_at(h, c)) return Proposal{c, scale_, fmt::format("halving round {}", round_ + 1)};
      if (h.any_in_flight()) return Proposal::waiting();  // the round is ranked on all its results
      if (alive_.size() <= 1) return std::nullopt;
      // Rank this round's measurements and keep the top 1/eta.
      std::vector<Config> led;
      std::vector<double> scores;
      for (const auto& c : alive_) {
        const ConfigSummary* s = h.find(c);  // this round's (longest-window) measurement
        if (s && h.leads(*s)) {
          led.push_back(c);
          scores.push_back(h.score(*s));
        }
      }
      const std::vector<std::size_t> ranked = best_first(scores);
      const size_t keep = std::max<size_t>(1, (alive_.size() + eta_ - 1) / eta_);
      alive_.clear();
      for (size_t i = 0; i < ranked.size() && i < keep; ++i) alive_.push_back(led[ranked[i]]);
      if (alive_.size() <= 1) return std::nullopt;
      ++round_;
      scale_ *= eta_;
    }
  }
  std::vector<Config> pending(const History& h) const override {
    std::vector<Config> out;
    for (const auto& c : alive_)
      if (!measured_at(h, c)) out.push_back(c);
    return out;
  }

 private:
  bool measured_at(const History& h, const Config& c) const {
    const ConfigSummary* s = h.find(c);
    return s && s->window_scale >= scale_;
  }
  std::vector<Config> alive_;
  int eta_;
  int round_ = 0;
  double scale_ = 1.0;
};

/// Asynchronous successive halving (ASHA; Li et al., "A System for Massively Parallel Hyperparameter
/// Tuning", MLSys 2020), the halving of a parallel run. Rung k measures with windows eta^k × longer. A
/// config measured at rung k moves up to rung k + 1 as soon as it is in the top 1/eta of everything
/// measured at rung k so far; a free slot takes such a promotion when there is one, else the next config
/// at rung 0. No rung waits for its slowest trial. The top rung is the one where 1 config in eta^R remains.
class AshaStrategy : public Strategy {
 public:
  AshaStrategy(std::vector<Config> candidates, int eta) : configs_(std::move(candidates)), eta_(std::max(2, eta)) {
    for (std::size_t n = configs_.size(); n >= static_cast<std::size_t>(eta_); n /= static_cast<std::size_t>(eta_)) ++top_;
    done_.resize(static_cast<std::size_t>(top_) + 1);
    promoted_.resize(static_cast<std::size_t>(top_) + 1);
  }
  std::string name() const override { return "halving"; }
  std::optional<Proposal> next(const History& h) override {
    collect(h);
    for (int k = top_ - 1; k >= 0; --k) {  // the highest promotion first: it narrows the search soonest
      auto& rung = done_[static_cast<std::size_t>(k)];
      std::vector<std::string> keys;
      std::vector<double> scores;
      for (const auto& [key, score] : rung) {
        keys.push_back(key);
        scores.push_back(score);
      }
      const std::vector<std::size_t> ranked = best_first(scores);
      const std::size_t keep = ranked.size() / static_cast<std::size_t>(eta_);
      for (std::size_t i = 0; i < keep; ++i) {
        const double score = scores[ranked[i]];
        const std::string& key = keys[ranked[i]];
        if (score < 0 || !promoted_[static_cast<std::size_t>(k)].insert(key).second) continue;
        return propose(by_key_.at(key), k + 1);
      }
    }
    if (next_new_ < configs_.size()) {
      const Config c = configs_[next_new_++];
      by_key_[c.key()] = c;
      return propose(c, 0);
    }
    if (!waiting_.empty()) return Proposal::waiting();
    return std::nullopt;
  }
  std::vector<Config> pending(const History&) const override {
    return std::vector<Config>(configs_.begin() + static_cast<std::ptrdiff_t>(next_new_), configs_.end());
  }

 private:
  double scale(int rung) const { return std::pow(static_cast<double>(eta_), rung); }
  Proposal propose(const Config& c, int rung) {
    waiting_[c.key()] = rung;
    return Proposal{c, scale(rung), fmt::format("halving rung {} (async)", rung + 1)};
  }
  /// The verdicts that came in since the last call, each filed under its rung (-1: not eligible).
  void collect(const History& h) {
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      const ConfigSummary* s = h.find(by_key_.at(it->first));
      if (!s || s->in_flight || s->window_scale < scale(it->second)) {
        ++it;
        continue;
      }
      done_[static_cast<std::size_t>(it->second)][it->first] = h.leads(*s) ? h.score(*s) : -1;
      it = waiting_.erase(it);
    }
  }
  std::vector<Config> configs_;
  int eta_;
  int top_ = 0;
  std::size_t next_new_ = 0;
  std::map<std::string, Config> by_key_;
  std::map<std::string, int> waiting_;                  ///< proposed, verdict not in yet: key → rung
  std::vector<std::map<std::string, double>> done_;     ///< per rung: key → score
  std::vector<std::set<std::string>> promoted_;         ///< per rung: keys moved up from it
};

/// Batch size for throughput: powers of two up from the start while each doubling gains ≥ margin and
/// stays stable (no OOM, headroom kept); if the first doubling loses, powers of two down instead; then
/// one refinement at the geometric midpoint between the best and the first worse/failed size.
/// With an effective batch, grad_accum = effective / (ranks × micro-batch) holds the samples per step fixed.
class BatchSizeStrategy : public Strategy {
 public:
  BatchSizeStrategy(Config start, std::int64_t b0, const StrategyOptions& o) : start_(std::move(start)), b0_(b0), o_(o) {}
  std::string name() const override { return "batch size"; }

  std::optional<Proposal> next(const History& h) override {
    if (stage_ == 0 && !fit_asked_ && o_.largest_fitting) {  // start at the largest batch predicted to fit
      fit_asked_ = true;
      std::vector<std::int64_t> cands;
      for (std::int64_t b = b0_; b > 0; b = step(b, 1)) if (valid(b)) cands.push_back(b);
      for (std::int64_t b = step(b0_, -1); b > 0; b = step(b, -1)) if (valid(b)) cands.push_back(b);
      if (!o_.batch_values.empty()) {
        cands.clear();
        for (std::int64_t v : o_.batch_values) if (valid(v)) cands.push_back(v);
      }
      if (const std::int64_t f = o_.largest_fitting(start_, cands); f > 0) {
        b0_ = f;
        phase_ = "batch size (from the largest predicted to fit)";
      }
    }
    while (true) {
      const std::int64_t b = candidate();
      if (b <= 0) return std::nullopt;
      const Config c = config_for(b);
      const ConfigSummary* s = h.find(c);
      if (!s) return Proposal{c, 1.0, phase_};
      if (s->in_flight) return Proposal::waiting();  // each step decides on the last one's result
      observe(b, s->eligible, h.score(*s));
    }
  }
  std::vector<Config> pending(const History&) const override {
    std::vector<Config> out;
    if (dir_ != 0)
      for (std::int64_t b = step(last_, dir_); b > 0; b = step(b, dir_))
        if (valid(b)) out.push_back(config_for(b));
    return out;
  }

 private:
  bool listed(std::int64_t b) const {
    return o_.batch_values.empty() || std::find(o_.batch_values.begin(), o_.batch_values.end(), b) != o_.batch_values.end();
  }
  bool valid(std::int64_t b) const {
    return b >= 1 && b <= o_.max_batch && listed(b) && (o_.effective_batch == 0 || holds(b) || o_.other_batches);
  }
  /// Whether batch `b` can hold the effective batch (ranks × b divides it).
  bool holds(std::int64_t b) const { return o_.effective_batch > 0 && o_.effective_batch % (b * ranks()) == 0; }
  /// The next size after `from` walking up (dir > 0) or down: a doubling/halving, or the next listed
  /// size when the user listed them; -1 past the end.
  std::int64_t step(std::int64_t from, int dir) const {
    if (o_.batch_values.empty()) {
      const std::int64_t b = dir > 0 ? from * 2 : from / 2;
      return b >= 1 && b <= o_.max_batch ? b : -1;
    }
    if (dir > 0) {
      for (std::int64_t v : o_.batch_values)
        if (v > from) return v;
      return -1;
    }
    for (auto it = o_.batch_values.rbegin(); it != o_.batch_values.rend(); ++it)
      if (*it < from) return *it;
    return -1;
  }
  std::int64_t ranks() const { return std::stoll(start_.get("ranks", "1")); }
  Config config_for(std::int64_t b) const {
    Config c = start_;
    c.set("batch_size", std::to_string(b));
    if (holds(b)) c.set("grad_accum", std::to_string(o_.effective_batch / (b * ranks())));
    else if (o_.effective_batch > 0) c.set("grad_accum", "1");  // another global batch (answer b)
    return c;
  }
  std::int64_t candidate() const {
    if (stage_ == 0) return b0_;
    if (stage_ == 1) {  // walking (an --effective-batch that a size does not divide skips that size)
      std::int64_t b = step(last_, dir_);
      while (b > 0 && !valid(b)) b = step(b, dir_);
      return b;
    }
    if (stage_ == 2) return refine_;
    return -1;
  }
  /// `score`: the objective's (samples/s, or samples/s at the user's batch's efficiency under time): the
  /// batch search walks while it grows, so under time it stops where a doubling costs more samples than it saves.
  void observe(std::int64_t b, bool ok, double score) {
    if (stage_ == 0) {
      best_b_ = b;
      best_ = ok ? score : 0;
      last_ = b;
      dir_ = 1;
      stage_ = 1;
      return;
    }
    if (stage_ == 1) {
      last_ = b;
      if (ok && score >= best_ * (1 + o_.batch_margin)) {
        best_b_ = b;
        best_ = score;
        tried_down_ = true;  // going up works: no need to look down
        return;
      }
      if (ok && score > best_) {  // better, but by less than the margin: stop, keep it
        best_b_ = b;
        best_ = score;
      }
      worse_b_ = b;
      if (dir_ > 0 && !tried_down_ && best_b_ == b0_) {  // the first doubling lost: look down instead
        tried_down_ = true;
        dir_ = -1;
        last_ = b0_;
        return;
      }
      // Refine once between the best and the first worse size (geometric mean, a multiple of 8 when ≥ 16;
      // among listed sizes, the listed one nearest to it strictly between the two).
      const double geo = std::sqrt(static_cast<double>(best_b_) * static_cast<double>(worse_b_));
      std::int64_t mid = static_cast<std::int64_t>(std::llround(geo));
      if (mid >= 16) mid = mid / 8 * 8;
      if (!o_.batch_values.empty()) {
        mid = -1;
        for (std::int64_t v : o_.batch_values)
          if (v > std::min(best_b_, worse_b_) && v < std::max(best_b_, worse_b_) &&
              (mid < 0 || std::abs(std::log(static_cast<double>(v) / geo)) < std::abs(std::log(static_cast<double>(mid) / geo))))
            mid = v;
      }
      refine_ = (mid > 0 && mid != best_b_ && mid != worse_b_ && valid(mid)) ? mid : -1;
      stage_ = refine_ > 0 ? 2 : 3;
      return;
    }
    stage_ = 3;
  }

  Config start_;
  std::int64_t b0_;
  StrategyOptions o_;
  bool fit_asked_ = false;
  std::string phase_ = "batch size";
  int stage_ = 0, dir_ = 0;
  std::int64_t last_ = 0, best_b_ = 0, worse_b_ = 0, refine_ = -1;
  double best_ = 0;
  bool tried_down_ = false;
};

/// Stages run one after another; each stage is built when the previous ends, from the best so far.
class AutoStrategy : public Strategy {
 public:
  AutoStrategy(const KnobSpace& space, Config baseline, std::int64_t b0, StrategyOptions o)
      : space_(space), baseline_(std::move(baseline)), b0_(b0), o_(o) {}
  std::string name() const override { return "auto"; }
  std::optional<Proposal> next(const History& h) override {
    while (stage_ < 5) {
      if (!current_) current_ = build(h);
      if (current_) {
        if (auto p = current_->next(h)) {
          if (stage_ == 0 && !p->wait) p->phase = "recipe";
          return p;
        }
        // The next stage is built from the best so far: the last stage's results must be in.
        if (h.any_in_flight()) return Proposal::waiting();
      }
      current_.reset();
      ++stage_;
    }
    return std::nullopt;
  }
  std::vector<Config> pending(const History& h) const override { return current_ ? current_->pending(h) : std::vector<Config>{}; }

 private:
  Config best_config(const History& h) const {
    const ConfigSummary* b = h.best();
    return b ? b->config : baseline_;
  }
  std::unique_ptr<Strategy> build(const History& h) {
    const bool has_batch =
        std::any_of(space_.axes().begin(), space_.axes().end(), [](const auto& a) { return a.first == "batch_size"; });
    switch (stage_) {
      case 0: {  // the recipe: every commonly recommended setting at once
        const Config r = recommended_recipe(space_, baseline_);
        return r == baseline_ ? nullptr : std::make_unique<ListStrategy>("recipe", std::vector<Config>{r});
      }
      case 1: {  // batch size for throughput, from the best so far
        if (!has_batch) return nullptr;
        const Config from = best_config(h);
        return std::make_unique<BatchSizeStrategy>(from, std::stoll(from.get("batch_size", std::to_string(b0_))), o_);
      }
      case 2: {  // one knob at a time from there
        return std::make_unique<CoordinateStrategy>(space_, best_config(h), local_skip());
      }
      case 3: {  // the neighbourhoods of the leaders one trial cannot rank (a noisy ranking may have sent the
                 // descent the wrong way): the best two, and up to four within 3 window IQRs of the best
                 // (the beam sizes and the factor measured in the search study, docs/search.md)
        return std::make_unique<NeighbourhoodStrategy>(space_, best_config(h), local_skip(), 2, 4, 3.0);
      }
      case 4: {  // the time objective: the other knobs were tuned at the user's batch; try the best changed
                 // batch with them too, so answer (b) is not left with the batch stage's knobs
        if (!has_batch || !h.objective().holds_user_batch()) return nullptr;
        const ConfigSummary* a = nullptr;
        const ConfigSummary* b = nullptr;
        for (const auto& [key, s] : h.all()) {
          if (!s.eligible) continue;
          const bool at = h.objective().at_user_batch(s);
          const ConfigSummary*& slot = at ? a : b;
          if (!slot || h.score(s) > h.score(*slot)) slot = &s;
        }
        if (!a || !b) return nullptr;
        Config c = a->config;
        c.set("batch_size", b->config.get("batch_size"));
        if (o_.effective_batch > 0) c.set("grad_accum", b->config.get("grad_accum", "1"));
        if (h.find(c)) return nullptr;
        return std::make_unique<ListStrategy>("changed batch, tuned knobs", std::vector<Config>{c});
      }
    }
    return nullptr;
  }
  /// Knobs the local stages leave alone. Open-ended batch sizes are the batch stage's alone; sizes the
  /// user listed are few, and the best one moves with the other knobs (the search study, docs/search.md:
  /// resnet18's batch 64 pays only with contiguous memory, and the batch stage ran at channels_last), so
  /// they stay an axis and later passes measure them again at the new best config.
  std::vector<std::string> local_skip() const {
    std::vector<std::string> skip = {"grad_accum"};
    if (o_.batch_values.empty()) skip.push_back("batch_size");
    return skip;
  }
  KnobSpace space_;
  Config baseline_;
  std::int64_t b0_;
  StrategyOptions o_;
  int stage_ = 0;
  std::unique_ptr<Strategy> current_;
};

}  // namespace

Config recommended_recipe(const KnobSpace& space, const Config& baseline) {
  Config r = baseline;
  for (const Knob& k : knob_catalog()) {
    if (!applies_to(k.name, baseline)) continue;
    for (const auto& v : k.recipe)
      if (offers(space, k.name, v)) {
        r.set(k.name, v);
        break;
      }
  }
  return r;
}

std::unique_ptr<Strategy> make_strategy(const StrategyOptions& o, const KnobSpace& space, const Config& baseline,
                                        const std::map<std::string, std::string>& workload_defaults) {
  const std::vector<std::string> names = {"grid", "random", "coordinate", "halving", "auto"};
  auto grid = [&] {
    std::vector<Config> g;
    for (const auto& c : space.grid()) {
      // Configs from the grid set every searched knob; the baseline's extra settings stay as they are.
      Config full = baseline;
      for (const auto& [k, v] : c.values()) full.set(k, v);
      g.push_back(full);
    }
    return g;
  };
  if (o.name == "grid") return std::make_unique<ListStrategy>("grid", grid());
  if (o.name == "random") {
    auto g = grid();
    std::mt19937_64 rng(o.seed);
    std::shuffle(g.begin(), g.end(), rng);
    const size_t n = o.max_trials > 0 ? static_cast<size_t>(o.max_trials) : std::max<size_t>(4, g.size() / 3);
    if (g.size() > n) g.resize(n);
    return std::make_unique<ListStrategy>("random", g);
  }
  if (o.name == "coordinate") return std::make_unique<CoordinateStrategy>(space, baseline);
  if (o.name == "halving") {
    if (o.slots > 1) return std::make_unique<AshaStrategy>(grid(), o.halving_eta);
    return std::make_unique<HalvingStrategy>(grid(), o.halving_eta);
  }
  if (o.name == "auto") {
    const auto it = workload_defaults.find("batch_size");
    return std::make_unique<AutoStrategy>(space, baseline, it == workload_defaults.end() ? 32 : std::stoll(it->second), o);
  }
  throw UsageError(fmt::format("strategy '{}' is not allowed; allowed: {}{}", o.name, join(names), did_you_mean(o.name, names)));
}

}  // namespace autotune
