// The memory model (tuner/memory/model.h) on records shaped as a worker writes them: families, the
// computed model states, phase curves and their extrapolation, skipping, misses and their correction,
// failed probes, and the advice when even batch 1 cannot fit. The worker's side (the counting allocator
// and the states it counts) is tested end to end by tests/integration/memory_test.py.
#include "tuner/memory/model.h"

#include <gtest/gtest.h>

#include "knobs/error.h"
#include "knobs/memory.h"
#include "tuner/memory/probes.h"
#include "tuner/search/strategy.h"

namespace autotune {
namespace {

constexpr std::int64_t MiB = 1 << 20;

/// A model of 1,000,000 fp32 parameters in two tensors, AdamW loop: 16 MB of states.
const std::vector<std::int64_t> kNumels = {600000, 400000};
std::int64_t states() { return analytic_states(kNumels, 4, "loop", 1, false, 1).total(); }

/// A trial of `c` at batch `b` whose phases peak at states + fwd(b), bwd(b), opt(b).
TrialRecord record(Config c, std::int64_t b, std::int64_t fwd, std::int64_t bwd, std::int64_t opt, TrialKind kind = TrialKind::memory,
                   TrialStatus st = TrialStatus::ok, std::int64_t id = 1) {
  c.set("batch_size", std::to_string(b));
  TrialRecord r;
  r.id = id;
  r.kind = kind;
  r.plan.config = c;
  r.result.status = st;
  MemoryRecord m;
  m.allocator = "cpu-counting";
  m.batch_size = b;
  m.param_numels = kNumels;
  const StateBytes s = analytic_states(kNumels, 4, c.get("optimizer_impl", "loop"), 1, false, 1);
  m.param_bytes = s.params;
  m.grad_bytes = s.grads;
  m.optimizer_bytes = s.optimizer;
  m.forward_peak = s.total() + fwd;
  m.backward_peak = s.total() + bwd;
  m.optimizer_peak = s.total() + opt;
  m.forward_backward_peak = std::max(m.forward_peak, m.backward_peak);
  m.peak_allocated = std::max(m.forward_backward_peak, m.optimizer_peak);
  r.result.memory = m;
  return r;
}

/// Activations 1 MiB + 100 KiB per sample in the forward; the backward 2 MiB + 50 KiB/sample (flatter at
/// small batches, as a backward whose peak is at its end); the optimizer step 8 MiB flat.
std::int64_t fwd(std::int64_t b) { return MiB + b * 100 * 1024; }
std::int64_t bwd(std::int64_t b) { return std::max(2 * MiB + b * 50 * 1024, fwd(b) + b * 10 * 1024); }
std::int64_t opt(std::int64_t) { return 8 * MiB; }

MemoryModel probed(std::int64_t capacity, const Config& c = {}) {
  MemoryModelOptions o;
  o.capacity_bytes = capacity;
  MemoryModel m(o, {{"batch_size", "64"}});
  for (std::int64_t b : probe_batches(64)) m.add(record(c, b, fwd(b), bwd(b), opt(b)));
  return m;
}

TEST(MemoryFamily, IgnoresTheBatchAndKnobsThatDoNotMoveMemory) {
  const std::map<std::string, std::string> d = {{"batch_size", "64"}};
  Config a, b;
  a.set("batch_size", "32").set("threads", "1").set("precision", "tf32").set("log_every", "10");
  b.set("batch_size", "256");
  EXPECT_EQ(memory_family(a, d), memory_family(b, d));
  EXPECT_EQ(memory_family(b, d), "(defaults)");
  Config c;
  c.set("precision", "amp_bf16");
  EXPECT_NE(memory_family(c, d), memory_family(b, d));
  Config e;
  e.set("optimizer_impl", "fused");
  EXPECT_EQ(memory_family(e, d), "optimizer_impl=fused");
}

TEST(AnalyticStates, AdamWOfEachImplementationAndDdpBuckets) {
  const StateBytes loop = analytic_states({10, 3}, 4, "loop", 1, false, 1);
  EXPECT_EQ(loop.params, 52);
  EXPECT_EQ(loop.grads, 52);
  EXPECT_EQ(loop.optimizer, 104);  // m and v
  EXPECT_EQ(loop.buckets, 0);
  EXPECT_EQ(analytic_states({10, 3}, 4, "foreach", 1, false, 1).optimizer, 104 + 8);  // a float32 step per tensor
  EXPECT_EQ(analytic_states({10, 3}, 4, "fused", 2, false, 1).buckets, 52);            // a flat copy of the gradients
  EXPECT_EQ(analytic_states({10, 3}, 4, "fused", 2, true, 1).buckets, 0);              // gradients are views into it
  const StateBytes cuda = analytic_states({10, 3}, 4, "fused", 1, false, 512);         // each tensor in 512-byte blocks
  EXPECT_EQ(cuda.params, 1024);
  EXPECT_EQ(cuda.optimizer, 4 * 512 + 2 * 512);
}

TEST(ParseSize, SuffixesAndOneLineErrors) {
  EXPECT_EQ(parse_size("512M", "--memory-cap"), 512 * MiB);
  EXPECT_EQ(parse_size("1.5G", "--memory-cap"), 3 * 512 * MiB);
  EXPECT_EQ(parse_size("2GiB", "--memory-cap"), 2048 * MiB);
  EXPECT_EQ(parse_size("4096", "--memory-cap"), 4096);
  for (const char* bad : {"12Q", "", "0", "-1G", "G", "1.2.3M"}) {
    try {
      parse_size(bad, "--memory-cap");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const UsageError& e) {
      const std::string w = e.what();
      EXPECT_NE(w.find("--memory-cap '" + std::string(bad) + "' is not a size"), std::string::npos) << w;
      EXPECT_NE(w.find("allowed:"), std::string::npos) << w;
      EXPECT_EQ(w.find('\n'), std::string::npos) << w;
    }
  }
}

TEST(MemoryModel, PredictsHeldOutBatchesFromThreeProbes) {
  const MemoryModel m = probed(0);
  for (std::int64_t b : {128, 256, 512}) {
    Config c;
    c.set("batch_size", std::to_string(b));
    const MemoryPrediction p = m.predict(c);
    ASSERT_TRUE(p.known) << p.why_unknown;
    const std::int64_t truth = states() + std::max({fwd(b), bwd(b), opt(b)});
    // The backward's slope beyond the probes is at least the forward's (the activations are alive when it starts).
    EXPECT_NEAR(static_cast<double>(p.peak), static_cast<double>(truth), 0.01 * truth) << "batch " << b;
    EXPECT_LE(p.lo, truth);
    EXPECT_GE(p.hi, truth);
    EXPECT_EQ(p.states.total(), states());
  }
}

TEST(MemoryModel, TheUpperEndCarriesTheCachingAllocatorsReservedOverhead) {
  MemoryModelOptions o;
  MemoryModel m(o, {{"batch_size", "64"}});
  for (std::int64_t b : probe_batches(64)) {
    TrialRecord r = record({}, b, fwd(b), bwd(b), opt(b));
    r.result.memory->peak_reserved = r.result.memory->peak_allocated * 11 / 10;  // 10% reserved but free
    m.add(r);
  }
  Config c;
  c.set("batch_size", "64");
  const MemoryPrediction p = m.predict(c);
  ASSERT_TRUE(p.known);
  EXPECT_NEAR(p.reserved_ratio, 1.1, 1e-3);
  EXPECT_GE(static_cast<double>(p.hi), 1.1 * static_cast<double>(p.peak));  // allocated peak + 1% + 10% reserved
  EXPECT_NEAR(static_cast<double>(p.peak), static_cast<double>(states() + std::max({fwd(64), bwd(64), opt(64)})), 1.0);
}

TEST(MemoryModel, SkipsWhatCannotFitAndFindsTheLargestBatchThatDoes) {
  const std::int64_t cap = 96 * MiB;
  const MemoryModel m = probed(cap);
  Config big;
  big.set("batch_size", "2048");
  EXPECT_FALSE(m.predict(big).fits);
  const std::int64_t largest = m.largest_fitting(Config{}, {}, 1 << 14);
  ASSERT_GT(largest, 0);
  Config at, above;
  at.set("batch_size", std::to_string(largest));
  above.set("batch_size", std::to_string(2 * largest));
  EXPECT_TRUE(m.predict(at).fits);
  EXPECT_FALSE(m.predict(above).fits);
  EXPECT_LE(static_cast<double>(m.predict(at).hi), cap * 0.95);
  // Among listed candidates: the largest one that fits.
  EXPECT_EQ(m.largest_fitting(Config{}, {64, 128, largest, 4 * largest}, 1 << 20), largest);
}

TEST(MemoryModel, AnOutOfMemoryThatWasPredictedToFitIsAMissAndCorrectsTheModel) {
  MemoryModel m = probed(512 * MiB);
  Config c;
  c.set("batch_size", "512");
  ASSERT_TRUE(m.predict(c).fits);
  m.add(record({}, 512, fwd(512), bwd(512), opt(512), TrialKind::search, TrialStatus::oom, 7));
  ASSERT_EQ(m.misses().size(), 1u);
  EXPECT_NE(m.misses()[0].what.find("trial 7 at batch 512 ran out of memory"), std::string::npos) << m.misses()[0].what;
  EXPECT_FALSE(m.predict(c).fits);
  Config larger;
  larger.set("batch_size", "1024");
  EXPECT_NE(m.predict(larger).oom_seen.find("batch 512 ran out of memory (trial 7)"), std::string::npos);
  // A trial that peaks above the interval is a miss too, and becomes a point of the fit.
  MemoryModel m2 = probed(0);
  Config c2;
  c2.set("batch_size", "256");
  const std::int64_t hi = m2.predict(c2).hi;
  m2.add(record({}, 256, fwd(256) + 8 * MiB, bwd(256) + 8 * MiB, opt(256), TrialKind::search, TrialStatus::ok, 9));
  ASSERT_EQ(m2.misses().size(), 1u);
  EXPECT_GT(m2.predict(c2).peak, hi);
}

TEST(MemoryModel, AFailedProbeLeavesOnlyItsFamilyUnpredicted) {
  MemoryModelOptions o;
  MemoryModel m(o, {{"batch_size", "64"}});
  Config amp;
  amp.set("precision", "amp_bf16");
  TrialRecord crashed;
  crashed.kind = TrialKind::memory;
  crashed.plan.config = amp;
  crashed.plan.config.set("batch_size", "16");
  crashed.result.status = TrialStatus::crash;
  crashed.result.message = "worker killed by signal 11 (SIGSEGV)";
  m.add(crashed);
  for (std::int64_t b : probe_batches(64)) m.add(record({}, b, fwd(b), bwd(b), opt(b)));
  Config a256 = amp, d256;
  a256.set("batch_size", "256");
  d256.set("batch_size", "256");
  EXPECT_FALSE(m.predict(a256).known);
  EXPECT_NE(m.predict(a256).why_unknown.find("SIGSEGV"), std::string::npos) << m.predict(a256).why_unknown;
  EXPECT_FALSE(m.needs_probes(amp));  // not probed again: the tune goes on and runs its configs
  EXPECT_TRUE(m.predict(d256).known);
}

TEST(MemoryModel, APeakThatIsNotLinearInTheBatchIsNotPredictedBeyondTheProbes) {
  MemoryModelOptions o;
  MemoryModel m(o, {{"batch_size", "64"}});
  // The forward's per-sample bytes double with each probe (an algorithm that changes with the batch).
  m.add(record({}, 16, 16 * MiB, 0, 0));
  m.add(record({}, 32, 32 * MiB, 0, 0));
  m.add(record({}, 64, 96 * MiB, 0, 0));
  Config c;
  c.set("batch_size", "256");
  const MemoryPrediction p = m.predict(c);
  EXPECT_FALSE(p.known);
  EXPECT_NE(p.why_unknown.find("run it to know"), std::string::npos);
}

TEST(MemoryModel, StatesTooBigForBatchOneGetTheShardingLine) {
  const MemoryModel m = probed(12 * MiB);  // 16 MB of states alone
  const std::string a = m.cannot_fit_advice(Config{});
  EXPECT_NE(a.find("even batch 1 cannot fit: the model states are"), std::string::npos) << a;
  EXPECT_NE(a.find("(ZeRO-3 / FSDP, 16 B/parameter ÷ N) needs 5 ranks"), std::string::npos) << a;  // 15.3 MiB over (11.4 − 8.0) MiB
  EXPECT_NE(a.find("1000000 parameters × 16 bytes"), std::string::npos) << a;
  EXPECT_NE(a.find("ZeRO-3 / FSDP"), std::string::npos) << a;
  EXPECT_NE(a.find("ranks"), std::string::npos) << a;
  EXPECT_EQ(m.largest_fitting(Config{}, {}, 1 << 14), 0);
  // Plenty of room: no advice.
  EXPECT_EQ(probed(1024 * MiB).cannot_fit_advice(Config{}), "");
}

TEST(MemoryModel, ActivationsTooBigForBatchOneGetCheckpointingAndPrecision) {
  MemoryModelOptions o;
  o.capacity_bytes = 30 * MiB;  // batch 1's 31 MiB of activations alone are over it: sharding cannot help
  MemoryModel m(o, {{"batch_size", "64"}});
  for (std::int64_t b : {1, 2, 4}) m.add(record({}, b, 30 * MiB + b * MiB, 0, 0));
  const std::string a = m.cannot_fit_advice(Config{});
  EXPECT_NE(a.find("activations need"), std::string::npos) << a;
  EXPECT_NE(a.find("checkpointing=blocks"), std::string::npos) << a;
  EXPECT_NE(a.find("precision=amp_bf16"), std::string::npos) << a;
}

TEST(BatchSearch, StartsAtTheLargestBatchPredictedToFit) {
  KnobSpace space;
  space.add("batch_size", {"32", "64", "128"});
  StrategyOptions o;
  o.name = "auto";
  std::vector<std::int64_t> asked;
  o.largest_fitting = [&](const Config&, const std::vector<std::int64_t>& cands) -> std::int64_t {
    asked = cands;
    return 512;
  };
  Config start;
  start.set("batch_size", "64");
  auto s = make_strategy(o, space, start, {{"batch_size", "64"}});
  History h;
  ConfigSummary base;
  base.config = start;
  base.status = TrialStatus::ok;
  base.eligible = true;
  base.median = 100;
  h.add(base);
  std::optional<Proposal> first;
  while (auto p = s->next(h)) {
    if (p->config.has("batch_size") && p->config.get("batch_size") != "64") {
      first = p;
      break;
    }
    ConfigSummary v = base;
    v.config = p->config;
    h.add(v);
  }
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->config.get("batch_size"), "512");
  EXPECT_NE(first->phase.find("largest predicted to fit"), std::string::npos) << first->phase;
  EXPECT_FALSE(asked.empty());
}

}  // namespace
}  // namespace autotune
