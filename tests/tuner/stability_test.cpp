#include "tuner/search/stability.h"
#include "tuner/search/ranking.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>

namespace autotune {
namespace {

TrialRecord attempt(std::int64_t id, const std::string& batch, std::vector<double> per_window, TrialStatus st = TrialStatus::ok,
                    std::int64_t rss = 100 << 20) {
  TrialRecord r;
  r.id = id;
  r.kind = TrialKind::search;
  r.plan.config.set("batch_size", batch);
  r.result.status = st;
  r.result.batch_size = std::stoll(batch);
  for (double v : per_window) r.result.windows.push_back({10, static_cast<std::int64_t>(v), 1.0});
  r.result.losses = {1.0, 0.9};
  r.result.peak_rss_bytes = rss;
  r.result.host_total_bytes = 1000LL << 20;
  r.outcome = "exit 0";
  return r;
}

TEST(Stability, QuietOkConfigIsEligibleWithEveryCheckRecorded) {
  const auto a = attempt(1, "64", {1000, 1010, 990});
  const ConfigSummary s = summarize_config({&a}, {});
  EXPECT_TRUE(s.eligible) << s.reason;
  EXPECT_DOUBLE_EQ(s.median, 1000);
  EXPECT_LE(s.ci_lo, 1000);
  EXPECT_GE(s.ci_hi, 1000);
  ASSERT_EQ(s.checks.size(), 5u);
  EXPECT_EQ(s.checks[0].name, "survival");
  EXPECT_EQ(s.checks[1].detail, "0 non-finite of 2 measured losses");
  EXPECT_EQ(s.checks[2].detail, "IQR/median 1.0% over 3 windows ≤ 5% (attempt 1 of 1)");
  EXPECT_EQ(s.checks[3].detail, "last window -1.0% vs the first (within ±5%)");
  EXPECT_EQ(s.checks[4].detail, "peak RSS 100 MiB = 10.0% of 1000 MiB (limit 90%)");
}

TEST(Stability, AnotherProcessOnTheGpuMakesATrialBusyUnlessTheGuardIsOff) {
  auto a = attempt(1, "64", {1000, 1010, 990});
  a.result.host_load = HostLoad{0.01, 2, 3.0};  // the CPUs were quiet
  a.result.device_holders = DeviceHolders{1, 3.0 * (1 << 30), 2};
  StabilityOptions o;
  o.max_host_load = 0.10;
  EXPECT_TRUE(device_busy(a.result, o));
  EXPECT_TRUE(host_busy(a.result, o));
  const ConfigSummary s = summarize_config({&a}, o);
  EXPECT_TRUE(failed_quiet_host(s));
  const auto c = std::find_if(s.checks.begin(), s.checks.end(), [](const Check& k) { return k.name == kQuietHost; });
  ASSERT_NE(c, s.checks.end());
  EXPECT_NE(c->detail.find("1 other process(es) held the GPU (3072 MiB; allowed: none)"), std::string::npos) << c->detail;
  a.result.device_holders->others = 0;  // alone on the GPU: quiet
  EXPECT_FALSE(host_busy(a.result, o));
  a.result.device_holders->others = 1;
  o.max_host_load = 1.0;  // --max-host-load 100: the guard is off, for the GPU too
  EXPECT_FALSE(host_busy(a.result, o));
}

TEST(Stability, ATrialStillDriftingIsRemeasuredAndASettledAttemptIsUsed) {
  // Windows close enough for the IQR check (IQR/median 4%) but falling 8% from first to last: a
  // trial whose warm-up had not ended. It is re-measured like a noisy one, never silently trusted.
  StabilityOptions o;
  const auto a1 = attempt(1, "64", {1000, 960, 920});
  ConfigSummary s = summarize_config({&a1}, o);
  EXPECT_LE(s.rel_iqr, o.max_rel_iqr);
  EXPECT_NEAR(s.drift, -0.08, 1e-12);
  EXPECT_FALSE(s.eligible);
  EXPECT_EQ(s.reason, "drifting: last window -8.0% vs the first (beyond ±5%)");
  EXPECT_TRUE(wants_remeasure(s, 1, o));
  const auto a2 = attempt(2, "64", {930, 925, 935});
  s = summarize_config({&a1, &a2}, o);
  EXPECT_TRUE(s.eligible) << s.reason;
  EXPECT_EQ(s.measured_trial, 2);
  // Drifting upward counts too; once the re-measures are used up the config stays in the race, marked.
  const auto b1 = attempt(3, "64", {900, 940, 980}), b2 = attempt(4, "64", {900, 950, 990}), b3 = attempt(5, "64", {900, 945, 985});
  s = summarize_config({&b1, &b2}, o);
  EXPECT_FALSE(s.eligible);
  EXPECT_TRUE(wants_remeasure(s, 2, o));
  s = summarize_config({&b1, &b2, &b3}, o);
  EXPECT_TRUE(s.eligible) << s.reason;
  EXPECT_TRUE(s.unsettled);
  EXPECT_FALSE(wants_remeasure(s, 3, o));
  EXPECT_EQ(s.checks[3].detail.rfind("marked unsettled: last window +9.4% vs the first (beyond ±5%) in each of 3 attempts", 0), 0u)
      << s.checks[3].detail;
}

TEST(Stability, NoisyConfigIsRemeasuredThenRejected) {
  StabilityOptions o;
  const auto a1 = attempt(1, "64", {800, 1000, 1200});
  ConfigSummary s = summarize_config({&a1}, o);
  EXPECT_FALSE(s.eligible);
  EXPECT_EQ(s.reason, "noisy: IQR/median 20.0% over 3 windows > 5% (attempt 1 of 1)");
  EXPECT_TRUE(wants_remeasure(s, 1, o));
  const auto a2 = attempt(2, "64", {700, 1000, 1300});
  const auto a3 = attempt(3, "64", {900, 1000, 1150});
  s = summarize_config({&a1, &a2, &a3}, o);
  EXPECT_FALSE(s.eligible);
  EXPECT_FALSE(wants_remeasure(s, 3, o));  // 1 + max_remeasure attempts used up
  EXPECT_EQ(s.measured_trial, 3);
}

// In a VM, the hypervisor's steal (other guests on these CPUs) slows a trial as another program does, and comes and
// goes as theirs does: the guard counts it, and the quiet-host check names it (the CI machine's photo-task trials
// saw 0.26–0.63 cores of it beside nothing else, which the check called "other processes" alone).
TEST(Stability, TheHypervisorsStealIsCountedAndNamed) {
  StabilityOptions o;
  o.max_host_load = 0.10;
  auto a = attempt(1, "64", {995, 1000, 1005});
  a.result.host_load = HostLoad{0.47, 2, 3.0, 0.45};
  const ConfigSummary s = summarize_config({&a}, o);
  EXPECT_TRUE(host_busy(a.result, o));
  const auto c = std::find_if(s.checks.begin(), s.checks.end(), [](const Check& k) { return k.name == kQuietHost; });
  ASSERT_NE(c, s.checks.end());
  EXPECT_FALSE(c->passed);
  EXPECT_EQ(c->detail.rfind("other processes used 0.47 of 2 CPUs during the measured windows (limit 0.25), 0.45 of it the "
                            "hypervisor running other guests on them (steal); busy in 1 of 1 attempts",
                            0),
            0u)
      << c->detail;
  a.result.host_load = HostLoad{0.02, 2, 3.0, 0.01};  // a trace of steal is not worth a word
  const ConfigSummary q = summarize_config({&a}, o);
  EXPECT_EQ(std::find_if(q.checks.begin(), q.checks.end(), [](const Check& k) { return k.name == kQuietHost; })->detail,
            "other processes used 0.02 of 2 CPUs during the measured windows (limit 0.25)");
}

// Longer windows for a re-measure only where they help: an input-bound step (data ≥ 30% of it) whose windows vary
// or drift, as long as its spread says (r × the limit: r² as long, by powers of two, 2× at least, 8× at most). A busy
// host, a step that computes, a failed trial or a stable config keep their window.
TEST(Stability, OnlyAnInputBoundConfigThatVariesIsRemeasuredWithLongerWindows) {
  StabilityOptions o;
  o.max_host_load = 0.10;  // the guard on, whatever $AUTOTUNE_MAX_HOST_LOAD says (the suite turns it off)
  auto input_bound = [](TrialRecord r, double data_ms) {
    r.result.breakdown = Breakdown{data_ms, 0, 3, 5, 2, 0};  // a 10-ms step besides the data wait
    return r;
  };
  const auto slightly = input_bound(attempt(1, "64", {1000, 940, 1060}), 10);  // data 50%, IQR and drift 6%: 1.44× as long
  const ConfigSummary s = summarize_config({&slightly}, o);
  EXPECT_DOUBLE_EQ(data_share(s.breakdown), 0.5);
  EXPECT_DOUBLE_EQ(remeasure_scale(s, 1, o), 2);
  EXPECT_DOUBLE_EQ(remeasure_scale(s, 2, o), 4);  // still too spread at 2×: twice as long again
  const auto noisy = input_bound(attempt(2, "64", {800, 1000, 1200}), 10);  // IQR 20%: 16× as long would do
  const ConfigSummary n = summarize_config({&noisy}, o);
  EXPECT_DOUBLE_EQ(remeasure_scale(n, 1, o), kMaxWindowScale);
  EXPECT_DOUBLE_EQ(remeasure_scale(n, 8, o), 8);  // at the longest: a fresh process, windows as long
  const auto middling = input_bound(attempt(3, "64", {1000, 920, 1080}), 10);  // IQR and drift 8%: 2.56× → 4×
  EXPECT_DOUBLE_EQ(remeasure_scale(summarize_config({&middling}, o), 1, o), 4);
  const auto drifting = input_bound(attempt(4, "64", {1000, 1000, 1100}), 10);  // IQR 5%, drift +10%: 4×
  EXPECT_DOUBLE_EQ(remeasure_scale(summarize_config({&drifting}, o), 1, o), 4);
  const auto computing = input_bound(attempt(5, "64", {800, 1000, 1200}), 4);  // data 4 of 14 ms: 29%
  EXPECT_DOUBLE_EQ(remeasure_scale(summarize_config({&computing}, o), 1, o), 1);
  const auto steady = input_bound(attempt(6, "64", {995, 1000, 1005}), 10);
  EXPECT_DOUBLE_EQ(remeasure_scale(summarize_config({&steady}, o), 1, o), 1);
  auto busy = noisy;
  busy.result.host_load = HostLoad{1.5, 2, 1.0};  // another program held 1.5 of 2 CPUs: wait for a quiet host instead
  EXPECT_DOUBLE_EQ(remeasure_scale(summarize_config({&busy}, o), 1, o), 1);
  const auto failed = input_bound(attempt(7, "64", {}, TrialStatus::error), 10);
  EXPECT_DOUBLE_EQ(remeasure_scale(summarize_config({&failed}, o), 1, o), 1);
  EXPECT_DOUBLE_EQ(data_share(Breakdown{}), 0);
}

// The trials of a config whose re-measures lengthened its windows are all its own: the chain goes back from a scale
// whose first attempt is a re-measure to the longest shorter scale with attempts; a scale first measured by the search
// (successive halving's rungs) starts its own.
TEST(Stability, ALengthenedConfigsTrialsAreAllItsOwn) {
  MeasureOptions base;
  RecordIndex index(base);
  std::deque<TrialRecord> records;
  auto add = [&](std::int64_t id, TrialKind kind, double window, const std::string& batch) {
    TrialRecord r = attempt(id, batch, {1000, 1000, 1000});
    r.kind = kind;
    r.plan.setup.measure.window_min_seconds = window;
    records.push_back(r);
    index.add(records.back());
  };
  add(1, TrialKind::search, 1, "64");
  add(2, TrialKind::remeasure, 4, "64");  // lengthened 4×
  add(3, TrialKind::remeasure, 4, "64");
  add(4, TrialKind::search, 1, "128");
  add(5, TrialKind::search, 2, "128");  // a halving rung: its own
  Config c64, c128;
  c64.set("batch_size", "64");
  c128.set("batch_size", "128");
  auto ids = [](const std::vector<const TrialRecord*>& v) {
    std::vector<std::int64_t> out;
    for (const auto* r : v) out.push_back(r->id);
    return out;
  };
  EXPECT_EQ(ids(attempt_chain(index, c64, 4).attempts), (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(attempt_chain(index, c64, 4).shorter, 1u);
  EXPECT_EQ(ids(attempt_chain(index, c64, 1).attempts), (std::vector<std::int64_t>{1}));
  EXPECT_EQ(ids(attempt_chain(index, c128, 2).attempts), (std::vector<std::int64_t>{5}));
  EXPECT_EQ(attempt_chain(index, c128, 2).shorter, 0u);
  const ConfigSummary s = summarize_config(attempt_chain(index, c64, 4), StabilityOptions{});
  EXPECT_EQ(s.trial_ids, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(s.measured_trial, 2);  // the verdict is the 4× windows'
  EXPECT_NE(s.checks[2].detail.find("(attempt 2 of 3; windows 4× the run's)"), std::string::npos) << s.checks[2].detail;
}

TEST(Stability, AQuietRemeasureIsUsed) {
  const auto a1 = attempt(1, "64", {800, 1000, 1200});
  const auto a2 = attempt(2, "64", {995, 1000, 1005});
  const ConfigSummary s = summarize_config({&a1, &a2}, {});
  EXPECT_TRUE(s.eligible);
  EXPECT_EQ(s.measured_trial, 2);
  EXPECT_EQ((std::vector<std::int64_t>{1, 2}), s.trial_ids);
}

TEST(Stability, FailuresAreRejectedWithTheirReason) {
  auto oom = attempt(1, "512", {}, TrialStatus::oom);
  oom.result.message = "CUDA out of memory";
  ConfigSummary s = summarize_config({&oom}, {});
  EXPECT_FALSE(s.eligible);
  EXPECT_EQ(s.reason, "oom: CUDA out of memory");
  EXPECT_FALSE(wants_remeasure(s, 1, {}));

  auto nan = attempt(2, "64", {1000, 1000, 1000}, TrialStatus::non_finite);
  nan.result.losses = {1.0, std::nan("")};
  nan.result.message = "non-finite loss";
  s = summarize_config({&nan}, {});
  EXPECT_FALSE(s.eligible);
  EXPECT_EQ(s.checks[1].detail, "1 non-finite of 2 measured losses");

  const auto fat = attempt(3, "64", {1000, 1000, 1000}, TrialStatus::ok, 950LL << 20);
  s = summarize_config({&fat}, {});
  EXPECT_FALSE(s.eligible);
  EXPECT_EQ(s.reason, "peak RSS 950 MiB = 95.0% of 1000 MiB (limit 90%)");
}

TEST(HostNoise, MediansOverTheFirstTrialOfTheFirstConfigsOnly) {
  std::vector<TrialRecord> recs;
  // IQR/median 2%, 4%, …, 12% (half the range over 3 windows) and |drift| the same; a failed trial, a
  // re-measure and a longer-window trial in between are not the host's noise and are skipped.
  for (int i = 1; i <= 6; ++i) {
    const double d = 0.04 * i;
    recs.push_back(attempt(i, std::to_string(i), {1000 * (1 - d / 2), 1000, 1000 * (1 + d / 2)}));
  }
  recs.insert(recs.begin() + 2, attempt(20, "99", {}, TrialStatus::oom));
  recs.insert(recs.begin() + 3, attempt(21, "1", {500, 1000, 1500}));
  recs[3].kind = TrialKind::remeasure;
  recs.insert(recs.begin() + 4, attempt(22, "98", {500, 1000, 1500}));
  recs[4].plan.setup.measure.window_min_seconds *= 2;  // halving's longer windows
  recs.push_back(attempt(7, "7", {100, 1000, 1900}));  // a 7th config: past the first 6
  std::vector<const TrialRecord*> firsts;
  for (const auto& r : recs) firsts.push_back(&r);
  const HostNoise h = host_noise(firsts, MeasureOptions{}, 6, StabilityOptions{});
  EXPECT_EQ(h.trials, 6);
  EXPECT_EQ(h.busy, 0);
  EXPECT_NEAR(h.rel_iqr, 0.07, 1e-3);  // median of 2, 4, 6, 8, 10, 12%
  EXPECT_NEAR(h.drift, 0.151, 2e-3);   // median of |last ÷ first − 1| = (1 + d/2) ÷ (1 − d/2) − 1
  EXPECT_EQ(host_noise(firsts, MeasureOptions{}, 20, StabilityOptions{}).trials, 7);
}

TEST(HostNoise, TrialsTimedOnABusyHostAreNotTheHostsOwnNoise) {
  // Six configs' first trials, the first two timed while another program used a whole core of two: their 30% spread is
  // that program's, so the host's noise comes from the four quiet ones (1%) and the limits are not raised by it.
  std::vector<TrialRecord> recs;
  for (int i = 1; i <= 6; ++i) {
    const double d = i <= 2 ? 0.30 : 0.02;
    recs.push_back(attempt(i, std::to_string(i), {1000 * (1 - d / 2), 1000, 1000 * (1 + d / 2)}));
    HostLoad load;
    load.cpus = 2;
    load.other_cores = i <= 2 ? 1.0 : 0.01;
    recs.back().result.host_load = load;
  }
  std::vector<const TrialRecord*> firsts;
  for (const auto& r : recs) firsts.push_back(&r);
  StabilityOptions o;  // calibrating over 6 trials
  o.max_host_load = 0.10;  // the guard's default (the suite's environment turns it off)
  const HostNoise h = host_noise(firsts, MeasureOptions{}, 6, o);
  EXPECT_EQ(h.busy, 2);
  EXPECT_EQ(h.trials, 4);
  EXPECT_NEAR(h.rel_iqr, 0.01, 1e-3);  // half the 2% range over 3 windows
  const StabilityOptions c = calibrated(o, h, 3);  // 4 quiet trials of the 6 needed: the given limits stay
  EXPECT_DOUBLE_EQ(c.max_rel_iqr, o.max_rel_iqr);
  EXPECT_DOUBLE_EQ(c.max_drift, o.max_drift);
}

TEST(HostNoise, LimitsRiseToTheHostsNoiseNeverFallAndStopAtTheCeiling) {
  StabilityOptions o;  // 5% / 5%, calibrating, 6 trials, at most 4×
  HostNoise h{6, 0.058, 0.06};
  const StabilityOptions c = calibrated(o, h, 3);
  // 95th percentile ÷ median for 3 windows: IQR ≈ 2.08, |last − first| ≈ 2.92 (normal windows).
  EXPECT_NEAR(c.max_rel_iqr, 2.08 * 0.058, 0.003);
  EXPECT_NEAR(c.max_drift, 2.92 * 0.06, 0.005);
  EXPECT_DOUBLE_EQ(c.loss_tolerance, o.loss_tolerance);
  // A quiet host (a GPU box): the given limits stay.
  const StabilityOptions q = calibrated(o, HostNoise{6, 0.004, 0.003}, 3);
  EXPECT_DOUBLE_EQ(q.max_rel_iqr, 0.05);
  EXPECT_DOUBLE_EQ(q.max_drift, 0.05);
  // A very noisy one: 4 × the given limit at most.
  const StabilityOptions n = calibrated(o, HostNoise{6, 0.30, 0.40}, 3);
  EXPECT_DOUBLE_EQ(n.max_rel_iqr, 0.20);
  EXPECT_DOUBLE_EQ(n.max_drift, 0.20);
  // Not yet measured, or switched off: unchanged.
  EXPECT_DOUBLE_EQ(calibrated(o, HostNoise{5, 0.058, 0.06}, 3).max_rel_iqr, 0.05);
  o.calibrate = false;
  EXPECT_DOUBLE_EQ(calibrated(o, h, 3).max_rel_iqr, 0.05);
  // More windows: the IQR's spread narrows, so the same median allows less above it.
  o.calibrate = true;
  EXPECT_LT(calibrated(o, h, 10).max_rel_iqr, c.max_rel_iqr);
}

TEST(Stability, WinnerIsFastestUnlessTiedWithASimplerConfig) {
  const auto base = attempt(1, "64", {1000, 1010, 990});
  const auto fast = attempt(2, "256", {2000, 2020, 1980});
  const auto close = attempt(3, "128", {1990, 2000, 2010});
  const auto slow = attempt(4, "32", {500, 505, 495});
  std::vector<ConfigSummary> cs = {summarize_config({&base}, {}), summarize_config({&fast}, {}), summarize_config({&slow}, {})};
  std::string note;
  EXPECT_EQ(choose_winner(cs, {{"batch_size", "64"}}, note), 1);
  EXPECT_EQ(note, "");

  // 128 and 256 overlap; both are one non-default knob; 128 uses less memory → preferred.
  auto close_lean = close;
  close_lean.result.peak_rss_bytes = 50 << 20;
  cs.push_back(summarize_config({&close_lean}, {}));
  EXPECT_EQ(choose_winner(cs, {{"batch_size", "64"}}, note), 3);
  EXPECT_NE(note.find("'batch_size=128' (2000 samples/s) is within the 95% CI of the fastest, 'batch_size=256'"),
            std::string::npos)
      << note;

  for (auto& c : cs) c.eligible = false;
  EXPECT_EQ(choose_winner(cs, {}, note), -1);
}

TrialResult losses(std::vector<double> warmup, std::vector<double> measured) {
  TrialResult r;
  r.warmup_losses = std::move(warmup);
  r.losses = std::move(measured);
  return r;
}

TEST(LossTrajectory, ASteepCurveTrailingFp32ByAStepOrTwoPassesAndAStalledOrDivergingOneDoesNot) {
  // Losses of an H100 run (resnet50 memorising its synthetic batch, batch 512): amp_bf16 and its fp32
  // twin, 6 warm-up steps then the measured ones. The means of steps 12–21 are 36% apart; bf16 trails
  // by about two steps.
  const TrialResult fp32 =
      losses({7.046, 5.77, 5.806, 5.692, 5.316, 5.103},
             {4.854, 4.594, 4.44, 3.952, 3.493, 2.975, 2.442, 2.195, 1.689, 1.126, 0.81, 0.625, 0.381, 0.245, 0.172});
  const TrialResult bf16 =
      losses({7.048, 5.772, 5.828, 5.704, 5.343, 5.118}, {4.906, 4.681, 4.574, 4.18, 3.857, 3.432, 2.925, 2.702, 2.251, 1.698,
                                                          1.34, 1.097, 0.81, 0.542, 0.425, 0.325, 0.187, 0.135});
  const Check ok = loss_trajectory_check(bf16, fp32, 0.05);
  EXPECT_TRUE(ok.passed) << ok.detail;
  EXPECT_EQ(ok.detail,
            "mean loss over steps 12–21: 1.7222 vs fp32 1.2660 (36.0% apart, limit 5%, or within fp32's curve up to 3 "
            "steps earlier: 1.2660–2.3747)");

  // Stalled: learns for a few steps then stays (5 steps behind by the end).
  TrialResult stalled = bf16;
  for (size_t i = 6; i < stalled.losses.size(); ++i) stalled.losses[i] = 2.9;
  EXPECT_FALSE(loss_trajectory_check(stalled, fp32, 0.05).passed);
  // Diverging: the loss turns up.
  TrialResult up = bf16;
  for (size_t i = 8; i < up.losses.size(); ++i) up.losses[i] = 3.0 + 0.5 * static_cast<double>(i - 8);
  EXPECT_FALSE(loss_trajectory_check(up, fp32, 0.05).passed);
  // On a flat curve the band is the mean itself: 10% above fails as before.
  const TrialResult flat = losses({}, std::vector<double>(20, 1.0));
  EXPECT_FALSE(loss_trajectory_check(losses({}, std::vector<double>(20, 1.1)), flat, 0.05).passed);
  EXPECT_TRUE(loss_trajectory_check(losses({}, std::vector<double>(20, 1.04)), flat, 0.05).passed);
  // NaN never passes.
  EXPECT_FALSE(loss_trajectory_check(losses({}, std::vector<double>(20, std::nan(""))), flat, 0.05).passed);
}

}  // namespace
}  // namespace autotune
