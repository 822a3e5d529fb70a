// A noise log from the user's own loop (tuner/pricing/noise_log.h) and the run priced from it (tuner/pricing/noise_over_run.h,
// price_from_log): the reader's refusals, one line each; non-finite steps skipped and counted; the windows a log is cut
// into; and a log whose noise scale grows along it priced as a trial with the same steps would be — its whole estimate
// the ratio of sums, its windows following the growth, B̄ over a longer run above the log's own value.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "knobs/error.h"
#include "knobs/noise_trajectory.h"
#include "tests/support/expect_throw_msg.h"
#include "tests/support/temp_dir.h"
#include "tuner/pricing/noise_log.h"
#include "tuner/pricing/noise_over_run.h"

namespace autotune {
namespace {

namespace fs = std::filesystem;

const std::string kHeader =
    R"({"autotune_noise_log": 1, "logger": "python", "mode": "accumulation", "micro_batch": 4, "micro_batches": 4, )"
    R"("parameters": 4810, "tensors": 4, "started": "random init", "data": "digits"})";

/// Steps 1 … n of 4 × 4 samples with exact norms for B_simple = 20·(samples / 1024)^alpha and |G|² = 1.
std::string steps_text(int n, double alpha, int every = 1) {
  std::string t;
  for (int step = every; step <= n; step += every) {
    const double samples = 16.0 * step, tr = 20 * std::pow(samples / 1024, alpha);
    t += "{\"step\": " + std::to_string(step) + ", \"samples\": " + std::to_string(16 * step) +
         ", \"small_sq\": " + std::to_string(1 + tr / 4) + ", \"big_sq\": " + std::to_string(1 + tr / 16) + ", \"loss\": " +
         std::to_string(3.0 / (1 + step / 100.0)) + "}\n";
  }
  return t;
}

/// The folder the tests' logs are written to, one per process, removed when the tests end.
fs::path scratch() {
  static const fs::path dir = fs::temp_directory_path() / ("autotune-noise-log-test-" + std::to_string(::getpid()));
  return dir;
}
class RemoveScratch : public ::testing::Environment {
  void TearDown() override { testing::TempDir::remove_tree(scratch().string()); }
};
[[maybe_unused]] ::testing::Environment* const kRemoveScratch = ::testing::AddGlobalTestEnvironment(new RemoveScratch);

std::string write(const std::string& name, const std::string& text) {
  const fs::path dir = scratch();
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

TEST(NoiseLogReader, ReadsTheHeaderAndEveryStep) {
  const NoiseLog log = read_noise_log(write("ok.jsonl", kHeader + "\n" + steps_text(64, 0.5)));
  EXPECT_EQ(log.logger, "python");
  EXPECT_EQ(log.micro_batch, 4);
  EXPECT_EQ(log.micro_batches, 4);
  EXPECT_EQ(log.step_batch(), 16);
  EXPECT_EQ(log.parameters, 4810);
  EXPECT_EQ(log.tensors, 4);
  EXPECT_EQ(log.data, "digits");
  ASSERT_EQ(log.steps.size(), 64u);
  EXPECT_EQ(log.samples.back(), 1024);
  EXPECT_EQ(log.step_numbers.back(), 64);
  EXPECT_NEAR(log.losses.front(), 3.0 / 1.01, 1e-6);
  EXPECT_EQ(log.dropped, 0);
}

TEST(NoiseLogReader, ANonFiniteStepIsSkippedAndCounted) {
  std::string text = kHeader + "\n" + steps_text(20, 0.5);
  text += R"({"step": 21, "samples": 336, "small_sq": null, "big_sq": 1.0})" "\n";
  const NoiseLog log = read_noise_log(write("nan.jsonl", text));
  EXPECT_EQ(log.steps.size(), 21u);
  EXPECT_EQ(log.dropped, 1);
  EXPECT_EQ(estimate_noise_scale(log.steps, 4, 16).steps, 20);
}

TEST(NoiseLogReader, BadLogsAreRefusedInOneLine) {
  const std::string steps = steps_text(20, 0.5);
  const auto refused = [&](const std::string& name, const std::string& text, const std::string& what) {
    const std::string p = write(name, text);
    EXPECT_THROW_MSG(read_noise_log(p), UsageError, "--noise-log " + p + ": " + what);
  };
  refused("empty.jsonl", "", "the file is empty; allowed: a log the loggers in logger/ write");
  refused("other.jsonl", "{\"hello\": 1}\n" + steps,
          "not an autotune noise log (its first line must be the header the loggers in logger/ write, "
          "{\"autotune_noise_log\": 1, …})");
  refused("version.jsonl", "{\"autotune_noise_log\": 7}\n", "format version 7 is not known; allowed: 1");
  std::string one = kHeader;
  one.replace(one.find("\"micro_batches\": 4"), 18, "\"micro_batches\": 1");
  refused("one.jsonl", one + "\n" + steps,
          "it has 1 micro-batch per step; the noise scale needs at least 2 (log a loop that accumulates gradients over 2 or more "
          "micro-batches, or one rank's and the all-reduced gradient)");
  const std::string cut = kHeader + "\n" + steps.substr(0, steps.size() - 20);
  refused("cut.jsonl", cut,
          "truncated: its last line (line 21) is cut short; allowed: a log whose every line is a whole record (drop the last "
          "line, or let the logger close the file)");
  refused("corrupt.jsonl", kHeader + "\n{\"step\": 1}\n" + steps, "line 2 is not a step record (it needs samples, small_sq and big_sq)");
  refused("back.jsonl", kHeader + "\n" + steps + steps,
          "line 22: samples 16 does not grow past the step before (320); a log counts the samples trained since the first step");
  refused("short.jsonl", kHeader + "\n" + steps_text(7, 0.5), "7 steps with finite norms; the noise scale needs at least 8");
  EXPECT_THROW_MSG(read_noise_log("/nonexistent/log.jsonl"), UsageError,
                   "--noise-log /nonexistent/log.jsonl: cannot read it (no such file, or not readable)");
}

TEST(NoiseLogReader, AnotherModelIsRefusedAndAnUncountedOneCannotBeChecked) {
  const NoiseLog log = read_noise_log(write("model.jsonl", kHeader + "\n" + steps_text(20, 0.5)));
  EXPECT_NO_THROW(check_noise_log_model(log, 4810, 4, "--model m.pt"));
  EXPECT_THROW_MSG(check_noise_log_model(log, 2410, 4, "--model m.pt"), UsageError,
                   "--noise-log " + log.path + ": it is from another model: 4,810 trainable parameters in 4 tensors; --model m.pt "
                   "has 2,410 in 4");
  EXPECT_THROW_MSG(check_noise_log_model(log, 0, 0, "the run in r (gpt-mini)"), UsageError,
                   "--noise-log " + log.path + ": the run in r (gpt-mini) does not record how many parameters its model has (a run "
                   "from before noise logs), so the log's model cannot be checked; tune again with --noise-log");
}

TEST(NoiseLogReader, ARunShorterThanTheLogIsRefusedBeforeAnythingRuns) {
  const NoiseLog log = read_noise_log(write("span.jsonl", kHeader + "\n" + steps_text(20, 0.5)));  // 320 samples
  EXPECT_NO_THROW(check_run_covers_log(log, "", 0));
  EXPECT_NO_THROW(check_run_covers_log(log, "320", 0));
  EXPECT_NO_THROW(check_run_covers_log(log, "1epochs", 0));  // the data's size decides, once a trial has read it
  EXPECT_THROW_MSG(check_run_covers_log(log, "300", 0), UsageError,
                   "--run-length 300 samples is 300 samples, shorter than the 320 samples your noise log " + log.path +
                       " trained; give the length of the whole run the log is from, or longer");
  EXPECT_THROW(check_run_covers_log(log, "4096tokens", 64), UsageError);  // 64 samples of 64 tokens
  EXPECT_NO_THROW(check_run_covers_log(log, "40960tokens", 64));
}

TEST(NoiseLogReader, KeepingALogKeepsTheEarlierOne) {
  const fs::path dir = fs::path(write("x", "")).parent_path() / "run";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const NoiseLog a = read_noise_log(write("a.jsonl", kHeader + "\n" + steps_text(20, 0.5)));
  const NoiseLog b = read_noise_log(write("b.jsonl", kHeader + "\n" + steps_text(40, 0.5)));
  EXPECT_EQ(kept_noise_log(dir.string()), "");
  keep_noise_log(dir.string(), a);
  keep_noise_log(dir.string(), b);
  EXPECT_EQ(read_noise_log(kept_noise_log(dir.string())).steps.size(), 40u);
  EXPECT_EQ(read_noise_log((dir / "noise-log-1.jsonl").string()).steps.size(), 20u);
}

TEST(NoiseLogWindows, DoublingWindowsEndAtTheLastSample) {
  NoiseLog log;
  log.micro_batch = 4;
  log.micro_batches = 4;
  for (int s = 1; s <= 1024; ++s) log.samples.push_back(16 * s);
  const LogWindows w = log_windows(log);  // 16,384 samples from the first step: 16,384 / 2^(w − 1) ≥ 2 × 16
  EXPECT_EQ(w.windows, 10);
  EXPECT_EQ(w.first_window_end << (w.windows - 1), 16384);
  log.samples.assign({16 * 512 + 16, 16 * 1024});  // a log that began at step 513 (a resumed run)
  const LogWindows r = log_windows(log);
  EXPECT_EQ(r.windows, 1);  // its one window is (8,192, 16,384]
  EXPECT_EQ(r.first_window_end, 16384);
}

TEST(NoiseLogPricing, ALogPricesAsATrialWithTheSameStepsWould) {
  const NoiseLog log = read_noise_log(write("grown.jsonl", kHeader + "\n" + steps_text(512, 0.5)));
  RunHorizon h;
  h.length = "65536";  // 8× the log
  NoiseScaleSummary n;
  EXPECT_EQ(price_from_log(n, log, h, 16, RunIdentity{}), "");
  ASSERT_TRUE(n.measured && n.over_run);
  EXPECT_NE(n.log.find("python logger, 512 steps of 4 × 4, from random init"), std::string::npos) << n.log;
  EXPECT_NEAR(n.trial_value, estimate_noise_scale(log.steps, 4, 16).b_simple, 1e-9);
  EXPECT_GE(n.windows.size(), 5u);
  EXPECT_NEAR(n.growth.exponent, 0.5, 0.05);  // exact norms: the windows follow the growth
  for (const auto& w : n.windows)  // each window's value is the curve at its samples, within the window's own spread
    EXPECT_NEAR(std::log(w.value), std::log(20 * std::pow(std::sqrt(double(w.from_samples) * w.to_samples) / 1024, 0.5)), 0.25);
  EXPECT_GT(n.value, n.trial_value);  // the run goes on past the log, where B is larger
  EXPECT_LE(n.lo, n.value);
  EXPECT_GE(n.hi, n.value);
  EXPECT_EQ(n.run_basis, "--run-length 65,536 samples");
  // The same steps as a noise-scale trial's record (from the first step, the same windows) price the same B̄.
  NoiseRecord rec;
  rec.micro_batch = 4;
  rec.micro_batches = 4;
  rec.weights = "random init";
  rec.steps = log.steps;
  rec.windows = log_windows(log).windows;
  rec.first_window_end = log_windows(log).first_window_end;
  NoiseScaleSummary trial;
  trial.value = estimate_noise_scale(rec.steps, 4, 16).b_simple;
  EXPECT_EQ(price_over_run(trial, rec, log.losses, h, 16), "");
  EXPECT_DOUBLE_EQ(trial.value, n.value);
  EXPECT_DOUBLE_EQ(trial.lo, n.lo);
  EXPECT_EQ(trial.windows.size(), n.windows.size());
  // Without a length or the data's size, the log's own span is the run.
  NoiseScaleSummary own;
  price_from_log(own, log, RunHorizon{}, 16, RunIdentity{});
  EXPECT_DOUBLE_EQ(own.run_samples, 8192);
  EXPECT_NE(own.run_basis.find("your noise log's span, 8,192 samples"), std::string::npos) << own.run_basis;
  // A run shorter than the log cannot be priced.
  h.length = "1000";
  NoiseScaleSummary shorter;
  EXPECT_EQ(price_from_log(shorter, log, h, 16, RunIdentity{}),
            "--run-length 1,000 samples is 1,000 samples, shorter than the 8,192 samples the noise log itself trained; give a longer "
            "run (resume with --resume --run-length N)");
}

}  // namespace
}  // namespace autotune
