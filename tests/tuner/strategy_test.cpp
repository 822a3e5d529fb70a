// Strategies against an in-process objective (ask/tell, tuner/strategy.h): nothing runs, each proposal
// is answered with the objective's value as an eligible verdict.
#include "tuner/strategy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

namespace autotune {
namespace {

/// Runs `s` to the end against `f`; returns the configs it proposed, in order, and fills `h`.
std::vector<Config> drive(Strategy& s, History& h, const std::function<double(const Config&)>& f) {
  std::vector<Config> proposed;
  while (auto p = s.next(h)) {
    proposed.push_back(p->config);
    ConfigSummary v;
    v.config = p->config;
    v.status = TrialStatus::ok;
    v.eligible = true;
    v.median = f(p->config);
    h.add(v);
    if (proposed.size() > 100) break;  // a strategy that never ends fails below
  }
  return proposed;
}

TEST(Coordinate, ASecondPassFindsAnInteractionTheFirstPassCouldNotSee) {
  // Two knobs where the first one swept only pays once the second has moved: from (a, b) = (off, off)
  // at 100, a alone loses (90), b alone wins (110), both win big (150). One pass ends at (off, on);
  // the second pass, from there, finds (on, on).
  const auto& order = impact_order();
  const auto pos = [&](const std::string& k) { return std::find(order.begin(), order.end(), k) - order.begin(); };
  const bool precision_first = pos("precision") < pos("memory_format");
  const std::string a = precision_first ? "precision" : "memory_format", b = precision_first ? "memory_format" : "precision";
  const std::map<std::string, std::pair<std::string, std::string>> vals = {{"precision", {"fp32", "amp_bf16"}},
                                                                           {"memory_format", {"contiguous", "channels_last"}}};
  KnobSpace space;
  space.add("precision", {"fp32", "amp_bf16"});
  space.add("memory_format", {"contiguous", "channels_last"});
  Config start;
  start.set("precision", "fp32");
  start.set("memory_format", "contiguous");
  auto f = [&](const Config& c) {
    const bool on_a = c.get(a) == vals.at(a).second, on_b = c.get(b) == vals.at(b).second;
    return on_a && on_b ? 150.0 : on_b ? 110.0 : on_a ? 90.0 : 100.0;
  };
  StrategyOptions o;
  o.name = "coordinate";
  auto s = make_strategy(o, space, start, {});
  History h;
  h.add([&] {
    ConfigSummary v;
    v.config = start;
    v.status = TrialStatus::ok;
    v.eligible = true;
    v.median = f(start);
    return v;
  }());
  const std::vector<Config> proposed = drive(*s, h, f);
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
  const std::vector<Config> proposed = drive(*s, h, f);
  EXPECT_EQ(proposed.size(), 4u);  // start (unmeasured here), its 3 neighbours; nothing twice
  EXPECT_EQ(h.best()->config, start);
}

TEST(Auto, TheRunnerUpsNeighboursFindTheOptimumANoisyDescentWalkedAwayFrom) {
  // The recipe (channels_last + fused) at 100; a single lucky trial puts the neighbour along the first
  // knob swept at 101, so the descent moves there, and from there the second knob only loses (90). The
  // optimum (150) is the recipe's neighbour along the second knob, two steps from where the descent
  // ended: only the runner-up's neighbourhood reaches it.
  const auto& order = impact_order();
  const auto pos = [&](const std::string& k) { return std::find(order.begin(), order.end(), k) - order.begin(); };
  const bool mf_first = pos("memory_format") < pos("optimizer_impl");
  const std::string a = mf_first ? "memory_format" : "optimizer_impl", b = mf_first ? "optimizer_impl" : "memory_format";
  const std::map<std::string, std::pair<std::string, std::string>> vals = {{"memory_format", {"contiguous", "channels_last"}},
                                                                           {"optimizer_impl", {"loop", "fused"}}};
  KnobSpace space;
  space.add("memory_format", {"contiguous", "channels_last"});
  space.add("optimizer_impl", {"loop", "fused"});
  Config baseline;
  baseline.set("memory_format", "contiguous");
  baseline.set("optimizer_impl", "loop");
  auto f = [&](const Config& c) {
    const bool a1 = c.get(a) == vals.at(a).second, b1 = c.get(b) == vals.at(b).second;
    return a1 && b1 ? 100.0 : b1 ? 101.0 : a1 ? 150.0 : 90.0;
  };
  StrategyOptions o;
  o.name = "auto";
  auto s = make_strategy(o, space, baseline, {});
  History h;
  ConfigSummary base;
  base.config = baseline;
  base.status = TrialStatus::ok;
  base.eligible = true;
  base.median = f(baseline);
  h.add(base);
  std::vector<std::string> phases;
  std::vector<Config> proposed;
  while (auto p = s->next(h)) {
    phases.push_back(p->phase);
    proposed.push_back(p->config);
    ConfigSummary v = base;
    v.config = p->config;
    v.median = f(p->config);
    h.add(v);
    ASSERT_LT(proposed.size(), 20u);
  }
  ASSERT_NE(h.best(), nullptr);
  EXPECT_DOUBLE_EQ(h.best()->median, 150.0);
  ASSERT_EQ(proposed.size(), 3u);  // the recipe, the lucky neighbour, then the optimum
  EXPECT_EQ(phases[0], "recipe");
  EXPECT_EQ(phases[1], "coordinate: " + a);
  EXPECT_EQ(phases[2], "neighbours: " + b);
}

}  // namespace
}  // namespace autotune
