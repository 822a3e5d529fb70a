// Strategies against an in-process objective (ask/tell, tuner/search/strategy.h): nothing runs, each proposal
// is answered with the objective's value as an eligible verdict.
#include "tuner/search/strategy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <set>

#include <fmt/format.h>

namespace autotune {
namespace {

ConfigSummary measured(const Config& c, double median, double rel_iqr = 0);

/// Runs `s` to the end against `f`; returns its proposals, in order, and fills `h`. Every verdict shows
/// windows `rel_iqr` apart (the host's noise as the strategies see it).
std::vector<Proposal> drive(Strategy& s, History& h, const std::function<double(const Config&)>& f, double rel_iqr = 0) {
  std::vector<Proposal> proposed;
  while (auto p = s.next(h)) {
    proposed.push_back(*p);
    h.add(measured(p->config, f(p->config), rel_iqr));
    if (proposed.size() > 100) break;  // a strategy that never ends fails below
  }
  return proposed;
}

/// Where coordinate descent sweeps knob `k` (its place in impact_order).
std::ptrdiff_t impact_position(const std::string& k) {
  const auto& order = impact_order();
  return std::find(order.begin(), order.end(), k) - order.begin();
}

/// Two two-valued knobs in the order coordinate descent sweeps them (impact_order): `a` first. Each
/// knob's values are (off, on); the space offers both, `start` has both off.
struct TwoKnobs {
  std::string a, b;
  std::map<std::string, std::pair<std::string, std::string>> vals;
  KnobSpace space;
  Config start;
  bool on(const Config& c, const std::string& k) const { return c.get(k) == vals.at(k).second; }
  /// The objective: its value with (a, b) at (off, off), (on, off), (off, on), (on, on).
  std::function<double(const Config&)> objective(double off_off, double on_off, double off_on, double on_on) const {
    return [=](const Config& c) {
      const bool on_a = on(c, a), on_b = on(c, b);
      return on_a && on_b ? on_on : on_b ? off_on : on_a ? on_off : off_off;
    };
  }
  /// Strategy `name` from `start` (measured first, as the tune loop does) run to its end against `f`.
  std::vector<Proposal> run(const std::string& name, const std::function<double(const Config&)>& f, History& h,
                            std::unique_ptr<Strategy>& s) const {
    StrategyOptions o;
    o.name = name;
    s = make_strategy(o, space, start, {});
    h.add(measured(start, f(start)));
    return drive(*s, h, f);
  }
};
TwoKnobs two_knobs(const std::string& k1, std::pair<std::string, std::string> v1, const std::string& k2,
                   std::pair<std::string, std::string> v2) {
  TwoKnobs t;
  t.a = impact_position(k1) < impact_position(k2) ? k1 : k2;
  t.b = t.a == k1 ? k2 : k1;
  t.vals = {{k1, v1}, {k2, v2}};
  for (const auto& [k, v] : t.vals) {
    t.space.add(k, {v.first, v.second});
    t.start.set(k, v.first);
  }
  return t;
}

/// An eligible verdict of `c` at `median`, its windows `rel_iqr` (IQR/median) apart.
ConfigSummary measured(const Config& c, double median, double rel_iqr) {
  ConfigSummary v;
  v.config = c;
  v.status = TrialStatus::ok;
  v.eligible = true;
  v.median = median;
  v.rel_iqr = rel_iqr;
  return v;
}

TEST(Coordinate, ASecondPassFindsAnInteractionTheFirstPassCouldNotSee) {
  // Two knobs where the first one swept only pays once the second has moved: from (a, b) = (off, off)
  // at 100, a alone loses (90), b alone wins (110), both win big (150). One pass ends at (off, on);
  // the second pass, from there, finds (on, on).
  const TwoKnobs t = two_knobs("precision", {"fp32", "amp_bf16"}, "memory_format", {"contiguous", "channels_last"});
  const std::string &a = t.a, &b = t.b;
  const auto& vals = t.vals;
  const auto f = t.objective(100, 90, 110, 150);
  History h;
  std::unique_ptr<Strategy> s;
  const std::vector<Proposal> proposed = t.run("coordinate", f, h, s);
  ASSERT_NE(h.best(), nullptr);
  EXPECT_DOUBLE_EQ(h.best()->median, 150.0);
  EXPECT_EQ(h.best()->config.get(a), vals.at(a).second);
  EXPECT_EQ(h.best()->config.get(b), vals.at(b).second);
  EXPECT_EQ(proposed.size(), 3u);  // (on, off), (off, on), then (on, on) in the second pass
  EXPECT_FALSE(s->next(h));        // and done: the second pass was the last (passes = 2)
}

TEST(Coordinate, NoSecondPassWhenTheFirstMovedNothing) {
  KnobSpace space;
  space.add("precision", {"fp32", "amp_bf16"});
  space.add("optimizer_impl", {"loop", "foreach", "fused"});
  Config start;
  start.set("precision", "fp32");
  start.set("optimizer_impl", "loop");
  auto f = [&](const Config& c) { return c == start ? 200.0 : 100.0; };
  StrategyOptions o;
  o.name = "coordinate";
  auto s = make_strategy(o, space, start, {});
  History h;
  const std::vector<Proposal> proposed = drive(*s, h, f);
  EXPECT_EQ(proposed.size(), 4u);  // start (unmeasured here), its 3 neighbours; nothing twice
  EXPECT_EQ(h.best()->config, start);
}

TEST(EveryStrategy, ADataParallelKnobIsNotProposedInAOneRankConfig) {
  // bucket_mb and static_graph do nothing without a second rank: in a one-rank space no strategy that walks from
  // a config (coordinate, neighbours, auto's recipe) proposes them; with ranks 2 listed they are proposed there.
  for (const bool two_ranks : {false, true}) {
    KnobSpace space;
    space.add("precision", {"fp32", "amp_bf16"});
    space.add("bucket_mb", {"25", "100"});
    space.add("static_graph", {"false", "true"});
    if (two_ranks) space.add("ranks", {"1", "2"});
    Config start;
    start.set("precision", "fp32").set("bucket_mb", "25").set("static_graph", "false");
    if (two_ranks) start.set("ranks", "1");
    for (const std::string name : {"coordinate", "auto"}) {
      StrategyOptions o;
      o.name = name;
      auto s = make_strategy(o, space, start, {});
      History h;
      h.add(measured(start, 100));
      // ranks=2 wins, so a two-rank config is where the walk goes on from
      const auto f = [](const Config& c) { return (c.get("ranks", "1") == "2" ? 150.0 : 100.0) + (c.get("precision") == "amp_bf16" ? 5 : 0); };
      const std::vector<Proposal> proposed = drive(*s, h, f);
      ASSERT_FALSE(proposed.empty()) << name;
      for (const Proposal& p : proposed) {
        if (p.config.get("ranks", "1") != "1") continue;
        const std::string moved = p.phase.substr(p.phase.find(": ") == std::string::npos ? p.phase.size() : p.phase.find(": ") + 2);
        EXPECT_TRUE(moved != "bucket_mb" && moved != "static_graph")
            << name << " swept a data-parallel knob at one rank: " << p.config.key() << " (" << p.phase << ")";
        if (p.phase == "recipe") {
          EXPECT_TRUE(p.config.get("bucket_mb") == "25" && p.config.get("static_graph") == "false") << p.config.key();
        }
      }
      const bool ddp_tried = std::any_of(proposed.begin(), proposed.end(), [](const Proposal& p) {
        return p.config.get("ranks", "1") == "2" && (p.config.get("bucket_mb") != "25" || p.config.get("static_graph") != "false");
      });
      EXPECT_EQ(ddp_tried, two_ranks) << name << ": data-parallel knobs are still searched where ranks > 1";
    }
  }
}

TEST(Auto, TheRunnerUpsNeighboursFindTheOptimumANoisyDescentWalkedAwayFrom) {
  // The recipe (channels_last + fused) at 100; a single lucky trial puts the neighbour along the first
  // knob swept at 101, so the descent moves there, and from there the second knob only loses (90). The
  // optimum (150) is the recipe's neighbour along the second knob, two steps from where the descent
  // ended: only the runner-up's neighbourhood reaches it.
  const TwoKnobs t = two_knobs("memory_format", {"contiguous", "channels_last"}, "optimizer_impl", {"loop", "fused"});
  const std::string &a = t.a, &b = t.b;
  History h;
  std::unique_ptr<Strategy> s;
  const std::vector<Proposal> proposed = t.run("auto", t.objective(90, 150, 101, 100), h, s);
  ASSERT_NE(h.best(), nullptr);
  EXPECT_DOUBLE_EQ(h.best()->median, 150.0);
  ASSERT_EQ(proposed.size(), 3u);  // the recipe, the lucky neighbour, then the optimum
  EXPECT_EQ(proposed[0].phase, "recipe");
  EXPECT_EQ(proposed[1].phase, "coordinate: " + a);
  EXPECT_EQ(proposed[2].phase, "neighbours: " + b);
}

TEST(Auto, TheNeighbourhoodCoversEveryLeaderOneTrialCannotRank) {
  // Three two-valued knobs; the recipe turns all three on (100) and the descent finds each one-knob step
  // back a little worse (99, 98, 97: within one trial's noise of 100 on a noisy host), so it stays. The
  // optimum (150) is one step from the third and fourth of those only. With windows 4% apart the beam
  // takes every leader within 3 × 4% of the best (up to four) and finds it; on a host whose windows agree
  // exactly the order is trusted, the beam is the best two, and it is not measured.
  KnobSpace space;
  space.add("precision", {"fp32", "amp_bf16"});
  space.add("memory_format", {"contiguous", "channels_last"});
  space.add("optimizer_impl", {"loop", "fused"});
  Config start;
  start.set("precision", "fp32");
  start.set("memory_format", "contiguous");
  start.set("optimizer_impl", "loop");
  std::vector<std::string> knobs = {"precision", "memory_format", "optimizer_impl"};
  std::stable_sort(knobs.begin(), knobs.end(),
                   [](const std::string& x, const std::string& y) { return impact_position(x) < impact_position(y); });
  // The recipe's value of each knob (its "on"), and the optimum: only the knob swept first left on.
  Config recipe = recommended_recipe(space, start), optimum = start;
  optimum.set(knobs[0], recipe.get(knobs[0]));
  const auto f = [&](const Config& c) {
    if (c == optimum) return 150.0;
    if (c == recipe) return 100.0;
    for (std::size_t i = 0; i < knobs.size(); ++i) {  // the recipe with knob i back at its default
      Config step = recipe;
      step.set(knobs[i], start.get(knobs[i]));
      if (c == step) return 99.0 - static_cast<double>(i);
    }
    return 50.0;
  };
  ASSERT_NE(recipe.get(knobs[1]), start.get(knobs[1]));  // the trap needs all three knobs in the recipe
  for (const double iqr : {0.04, 0.0}) {
    StrategyOptions o;
    o.name = "auto";
    auto s = make_strategy(o, space, start, {});
    History h;
    h.add(measured(start, f(start), iqr));
    const std::vector<Proposal> proposed = drive(*s, h, f, iqr);
    ASSERT_NE(h.best(), nullptr);
    const bool found = std::any_of(proposed.begin(), proposed.end(), [&](const Proposal& p) { return p.config == optimum; });
    EXPECT_EQ(found, iqr > 0) << "window IQR " << iqr;
    EXPECT_DOUBLE_EQ(h.best()->median, iqr > 0 ? 150.0 : 100.0);
    EXPECT_LT(proposed.size(), 8u);  // never more than the rest of the 8-config space
  }
}

/// Runs `s` with up to `slots` proposals in flight (History::mark_in_flight), answering the oldest first, as
/// the tune loop's parallel search does. Checks on the way: nothing in flight is proposed again, and a
/// strategy waits only while something is in flight. `most_in_flight` says how parallel it got.
std::vector<Proposal> drive_parallel(Strategy& s, History& h, const std::function<double(const Config&)>& f, int slots,
                                     int& most_in_flight) {
  std::deque<Proposal> flying;
  std::vector<Proposal> proposed;
  most_in_flight = 0;
  while (proposed.size() < 200) {
    while (static_cast<int>(flying.size()) < slots) {
      auto p = s.next(h);
      if (!p) break;
      if (p->wait) {
        EXPECT_TRUE(h.any_in_flight()) << "a strategy waited with nothing in flight";
        break;
      }
      const ConfigSummary* known = h.find(p->config);
      EXPECT_FALSE(known && known->in_flight) << "proposed again while in flight: " << p->config.key();
      h.mark_in_flight(p->config, p->window_scale);
      flying.push_back(*p);
      proposed.push_back(*p);
    }
    most_in_flight = std::max(most_in_flight, static_cast<int>(flying.size()));
    if (flying.empty()) break;
    const Proposal done = flying.front();
    flying.pop_front();
    h.clear_in_flight(done.config);
    ConfigSummary m = measured(done.config, f(done.config));
    m.window_scale = done.window_scale;
    h.add(m);
  }
  return proposed;
}

/// The serial drive with each verdict at its proposal's window scale (halving's rounds).
std::vector<Proposal> drive_scaled(Strategy& s, History& h, const std::function<double(const Config&)>& f) {
  std::vector<Proposal> proposed;
  while (auto p = s.next(h)) {
    EXPECT_FALSE(p->wait) << "a strategy waited in a serial run";
    if (p->wait) break;
    proposed.push_back(*p);
    ConfigSummary m = measured(p->config, f(p->config));
    m.window_scale = p->window_scale;
    h.add(m);
    if (proposed.size() > 200) break;
  }
  return proposed;
}

// Every strategy in four slots ends at the serial run's best, proposes nothing twice, and waits only for a
// result its next step needs. Grid and halving's first round fill every slot; coordinate measures one
// knob's values side by side.
TEST(Parallel, EveryStrategyInSlotsEndsWhereTheSerialOneDoes) {
  KnobSpace space;
  space.add("batch_size", {"32", "64", "128", "256"});
  space.add("precision", {"fp32", "amp_bf16"});
  space.add("optimizer_impl", {"loop", "foreach", "fused"});
  Config start;
  start.set("batch_size", "32");
  start.set("precision", "fp32");
  start.set("optimizer_impl", "loop");
  const auto f = [](const Config& c) {  // separable, one optimum: batch 128, amp_bf16, fused
    const std::map<std::string, double> b = {{"32", 1.0}, {"64", 1.3}, {"128", 1.6}, {"256", 1.5}};
    const auto it = b.find(c.get("batch_size"));
    return 100.0 * (it == b.end() ? 1.2 : it->second) * (c.get("precision") == "amp_bf16" ? 1.4 : 1.0) *
           (c.get("optimizer_impl") == "fused" ? 1.2 : c.get("optimizer_impl") == "foreach" ? 1.1 : 1.0);
  };
  for (const std::string name : {"grid", "random", "coordinate", "halving", "auto"}) {
    SCOPED_TRACE(name);
    StrategyOptions o;
    o.name = name;
    o.max_trials = 12;
    History hs, hp;
    hs.add(measured(start, f(start)));
    hp.add(measured(start, f(start)));
    auto serial = make_strategy(o, space, start, {});
    o.slots = 4;  // halving: asynchronous (ASHA)
    auto par = make_strategy(o, space, start, {});
    const auto ps = drive_scaled(*serial, hs, f);
    int most = 0;
    const auto pp = drive_parallel(*par, hp, f, 4, most);
    ASSERT_NE(hs.best(), nullptr);
    ASSERT_NE(hp.best(), nullptr);
    EXPECT_EQ(hp.best()->config, hs.best()->config);
    std::set<std::string> seen;
    for (const auto& p : pp) EXPECT_TRUE(seen.insert(fmt::format("{}@{}", p.config.key(), p.window_scale)).second) << p.config.key();
    if (name == "grid" || name == "random" || name == "halving") {
      EXPECT_EQ(most, 4);
    } else {
      EXPECT_GE(most, 2) << "one knob's values were not measured side by side";
    }
    if (name != "auto" && name != "halving") {
      EXPECT_EQ(pp.size(), ps.size()) << "the parallel run measured other configs than the serial one";
    }
    if (name == "halving") {  // ASHA: the winner reached the top rung, and every config was measured at rung 1
      EXPECT_GT(hp.best()->window_scale, 1.0);
      std::set<std::string> rung1;
      for (const auto& p : pp)
        if (p.window_scale == 1.0) rung1.insert(p.config.key());
      EXPECT_EQ(rung1.size(), space.grid().size());
    }
  }
}

}  // namespace
}  // namespace autotune
