#include "tuner/options/space_file.h"

#include <gtest/gtest.h>

#include "knobs/error.h"
#include "knobs/protocol.h"
#include "tests/support/expect_throw_msg.h"
#include "tests/support/temp_dir.h"

namespace autotune {
namespace {

std::string write(const testing::TempDir& dir, const std::string& text) {
  const std::string p = dir / "space.yaml";
  write_file_atomic(p, text);
  return p;
}

TEST(SpaceFile, YamlWithWorkloadStrategyAndKnobs) {
  testing::TempDir dir;
  const auto f = read_space_file(write(dir,
                                       "workload: resnet18\nstrategy: auto\nknobs:\n  batch_size: [32, 64]\n"
                                       "  precision: [fp32, amp_bf16]\n  zero_grad: none\n"));
  EXPECT_EQ(f.workload.value_or(""), "resnet18");
  EXPECT_EQ(f.strategy.value_or(""), "auto");
  EXPECT_EQ(f.space.describe(), "batch_size={32,64} precision={fp32,amp_bf16} zero_grad={none}");
}

TEST(SpaceFile, JsonWorksToo) {
  testing::TempDir dir;
  const auto f = read_space_file(write(dir, R"({"knobs": {"threads": [1, 2]}})"));
  EXPECT_EQ(f.space.describe(), "threads={1,2}");
}

TEST(SpaceFile, ErrorsNameFileAndLine) {
  testing::TempDir dir;
  std::string p = write(dir, "knobs:\n  batch_size: [32]\nstratgy: auto\n");
  EXPECT_THROW_MSG(read_space_file(p), UsageError,
                   p + ":3: unknown key 'stratgy'; allowed: workload, strategy, knobs (did you mean 'strategy'?)");
  p = write(dir, "knobs:\n  batch_size: [32]\n  precison: [fp32]\n");
  EXPECT_THROW_MSG(
      read_space_file(p), UsageError,
      p + ":3: unknown knob 'precison'; known knobs: batch_size, threads, precision, optimizer_impl, zero_grad, "
          "grad_accum, log_every, checkpointing, memory_format, pin_memory, decode, num_workers, prefetch, augment_device, cuda_graphs, cudnn_benchmark, ranks, bucket_mb, first_bucket_mb, "
      "grad_as_bucket_view, static_graph, broadcast_buffers, comm_hook, compile (did you mean 'precision'?)");
  p = write(dir, "knobs:\n  precision: [fp32, fp64]\n");
  EXPECT_THROW_MSG(read_space_file(p), UsageError,
                   p + ":2: knob 'precision': 'fp64' is not allowed; allowed: fp32, tf32, amp_fp16, amp_bf16");
  p = write(dir, "knobs: [batch_size]\n");
  EXPECT_THROW_MSG(read_space_file(p), UsageError, p + ":1: 'knobs' must map knob names to lists of values");
  p = write(dir, "knobs:\n  batch_size: [32\n");
  EXPECT_THROW(read_space_file(p), UsageError);
  EXPECT_THROW_MSG(read_space_file(dir / "absent.yaml"), UsageError, "--space " + (dir / "absent.yaml") + ": no such file");
}

}  // namespace
}  // namespace autotune
