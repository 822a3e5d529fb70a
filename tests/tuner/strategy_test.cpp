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

}  // namespace
}  // namespace autotune
