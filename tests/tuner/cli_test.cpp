#include "tuner/cli.h"

#include <gtest/gtest.h>

#include <sstream>

#include "tuner/tune/tune.h"
#include "knobs/error.h"
#include "tests/support/expect_throw_msg.h"

namespace autotune {
namespace {

struct Run {
  int status;
  std::string out, err;
};
Run cli(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int st = run_cli(args, out, err);
  return {st, out.str(), err.str()};
}

TEST(Cli, UnknownCommandSuggests) {
  const auto r = cli({"tunee"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(
      r.err,
      "autotune: unknown command 'tunee'; commands: tune, check, trial, apply, profile, report, converge, lr-sweep, memory, prepare-data, knobs, workloads (did you mean 'tune'?)\n");
}

TEST(Cli, UnknownOptionSuggests) {
  const auto r = cli({"tune", "--budgt", "5m"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(
      r.err,
      "autotune tune: unknown option '--budgt'; allowed: --help, --workload, --device, --seed, --image-size, --windows, "
      "--window-seconds, --warmup-seconds, --data, --cache, --max-bad-share, --model, --model-spec, --model-input, --model-target, "
      "--model-loss, --model-flops, --model-kwargs, --model-task, --model-seq, --model-output, --trainer, --plugin, --dist-timeout, --lr, --adam-beta1, --adam-beta2, --adam-eps, --data-order, --init-from, --memory-cap, --task, --trial-timeout, --launcher, "
      "--worker, --knobs, --budget, --out, "
      "--resume, --space, --strategy, --max-trials, "
      "--effective-batch, --confirm-top, --confirm-rounds, --max-noise, --max-drift, --max-host-load, --calibrate-noise, --loss-tolerance, --objective, --noise-burn-in, --noise-scale, --run-length, --noise-log, --lr-sweep, --memory-model, --frontend, "
      "--parallel, --executor, --pin, --trial-cpus, --trial-gpus, --trial-mem, --slurm-arg, --summary (did you "
      "mean '--budget'?)\n");
}

TEST(Cli, UnknownKnobAndValueAreOneLine) {
  auto r = cli({"tune", "--knobs", "batchsize=32,64"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(
      r.err,
      "autotune tune: unknown knob 'batchsize'; known knobs: batch_size, threads, precision, optimizer_impl, zero_grad, grad_accum, log_every, checkpointing, memory_format, pin_memory, decode, num_workers, prefetch, augment_device, cuda_graphs, cudnn_benchmark, ranks, bucket_mb, first_bucket_mb, "
      "grad_as_bucket_view, static_graph, broadcast_buffers, comm_hook, compile (did you mean 'batch_size'?)\n");
  r = cli({"trial", "--set", "threads=lots"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "autotune trial: knob 'threads': 'lots' is not allowed; allowed: integer 1..1024 or default\n");
  r = cli({"tune", "--run-length", "-2epochs"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "autotune tune: run-length '-2epochs' is not a count above 0; allowed: a count of samples, epochs or tokens above 0, "
                   "e.g. 500000, 3epochs, 2.5e9tokens\n");
  r = cli({"tune", "--budget", "ten minutes"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "autotune tune: budget 'ten minutes' is not a duration; allowed: seconds or e.g. 90s, 10m, 1h30m\n");
}

TEST(Cli, BadFlagValuesFromCli11AreRewordedWithStatus2) {
  auto r = cli({"tune", "--device", "tpu"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "autotune tune: --device 'tpu' is not allowed; allowed: auto, cpu, cuda\n");
  r = cli({"check", "--reps", "0"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "autotune check: --reps 0 is not allowed; allowed: 1..1000\n");
  r = cli({});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err.rfind("autotune: a command is required; commands: tune, check, trial,", 0), 0u) << r.err;
}

TEST(Cli, HelpListsEveryCommand) {
  auto r = cli({"--help"});
  EXPECT_EQ(r.status, 0);
  for (const char* c : {"tune", "trial", "knobs", "workloads"}) EXPECT_NE(r.out.find(c), std::string::npos) << c;
  r = cli({"tune", "--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("--budget"), std::string::npos) << r.out;
}

TEST(Cli, KnobsListsNameValuesDefaultAppliesTip) {
  const auto r = cli({"knobs"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("batch_size\n  values:  32, 64, 128, 256"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  default: the workload's default\n"), std::string::npos);
  EXPECT_NE(r.out.find("  applies: always\n"), std::string::npos);
  EXPECT_NE(r.out.find("threads\n  values:  default, 1, 2"), std::string::npos);
}

TEST(Cli, ResumeConflicts) {
  auto r = cli({"tune", "--resume", "/tmp/a", "--out", "/tmp/b"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "autotune tune: --resume DIR and --out DIR name different folders; give one\n");
  r = cli({"tune", "--resume", "/nonexistent/run"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "autotune tune: --resume /nonexistent/run: no journal.sqlite there; nothing to resume\n");
}

TEST(Cli, UnknownStrategySuggests) {
  const auto r = cli({"tune", "--strategy", "coordinat"});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err,
            "autotune tune: strategy 'coordinat' is not allowed; allowed: grid, random, coordinate, halving, auto "
            "(did you mean 'coordinate'?)\n");
}

TEST(Duration, Forms) {
  EXPECT_DOUBLE_EQ(parse_duration("90"), 90);
  EXPECT_DOUBLE_EQ(parse_duration("90s"), 90);
  EXPECT_DOUBLE_EQ(parse_duration("10m"), 600);
  EXPECT_DOUBLE_EQ(parse_duration("1h30m"), 5400);
  EXPECT_DOUBLE_EQ(parse_duration("0.5m"), 30);
  EXPECT_THROW_MSG(parse_duration("1m30"), UsageError,
                   "budget '1m30' is not a duration; allowed: seconds or e.g. 90s, 10m, 1h30m");
  EXPECT_THROW_MSG(parse_duration("5d"), UsageError, "budget '5d' is not a duration; allowed: seconds or e.g. 90s, 10m, 1h30m");
  EXPECT_THROW_MSG(parse_duration("0"), UsageError, "budget '0' must be positive");
}

}  // namespace
}  // namespace autotune
