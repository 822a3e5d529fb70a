#include "knobs/protocol.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "knobs/record.h"
#include "tests/support/expect_throw_msg.h"

namespace autotune {
namespace {

namespace fs = std::filesystem;

class ProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("autotune-protocol-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& f) const { return (dir_ / f).string(); }
  fs::path dir_;
};

TrialResult sample_result() {
  TrialResult r;
  r.status = TrialStatus::non_finite;
  r.message = "non-finite loss (nan) at measured step 3";
  r.workload = "mlp";
  r.config.set("batch_size", "128").set("threads", "1");
  r.device = "cpu";
  r.batch_size = 128;
  r.warmup_steps = 12;
  r.warmup_seconds = 0.42;
  r.windows = {{10, 1280, 0.5}, {11, 1408, 0.51}, {10, 1280, 0.49}};
  r.losses = {2.3, 2.1, 1.9};
  r.non_finite_steps = 1;
  r.peak_rss_bytes = 123456789;
  r.host_total_bytes = 24LL << 30;
  r.breakdown = {0.1, 0.0, 3.0, 5.0, 8.0, 0.01};
  r.applied = {{"threads", "1", "1"}};
  r.skipped = {{"cudnn_benchmark", "needs a CUDA device; none is available"}};
  r.env.torch_version = "2.11.0";
  r.env.cuda_compiled = "13.0";
  r.env.cpu_cores = 2;
  r.wall_seconds = 3.5;
  r.started = "forked";
  return r;
}

TEST_F(ProtocolTest, PlanRoundTripsThroughAFile) {
  TrialPlan p;
  p.setup.workload = "mlp";
  p.config.set("batch_size", "64");
  p.setup.seed = 7;
  p.setup.device = "cpu";
  p.setup.measure.windows = 5;
  p.setup.measure.window_min_seconds = 0.25;
  write_plan(p, path("plan.json"));
  const TrialPlan q = read_plan(path("plan.json"));
  EXPECT_EQ(q.setup.workload, "mlp");
  EXPECT_EQ(q.config, p.config);
  EXPECT_EQ(q.setup.seed, 7u);
  EXPECT_EQ(q.setup.device, "cpu");
  EXPECT_EQ(q.setup.measure.windows, 5);
  EXPECT_DOUBLE_EQ(q.setup.measure.window_min_seconds, 0.25);
  EXPECT_EQ(nlohmann::json(q), nlohmann::json(p));
}

TEST_F(ProtocolTest, ResultRoundTripsEveryField) {
  const TrialResult r = sample_result();
  write_result(r, path("result.json"));
  const TrialResult q = read_result(path("result.json"));
  EXPECT_EQ(nlohmann::json(q), nlohmann::json(r));
  EXPECT_EQ(q.status, TrialStatus::non_finite);
  ASSERT_EQ(q.windows.size(), 3u);
  EXPECT_DOUBLE_EQ(q.windows[1].samples_per_s(), 1408 / 0.51);
  EXPECT_EQ(q.skipped.at(0).reason, "needs a CUDA device; none is available");
  EXPECT_EQ(q.started, "forked");  // how the Python worker's process began
  EXPECT_FALSE(fs::exists(path("result.json.tmp." + std::to_string(::getpid()))));  // atomic write cleaned up
}

TEST_F(ProtocolTest, TheHostLoadAndTheGpusOtherHoldersRoundTrip) {
  TrialResult r = sample_result();
  r.host_load = HostLoad{0.4, 2, 3.0, 0.35};
  r.device_holders = DeviceHolders{1, 2.5e9, 2};
  write_result(r, path("busy.json"));
  const TrialResult q = read_result(path("busy.json"));
  ASSERT_TRUE(q.host_load);
  EXPECT_DOUBLE_EQ(q.host_load->steal_cores, 0.35);  // the hypervisor's, apart from other programs'
  EXPECT_DOUBLE_EQ(q.host_load->other_cores, 0.4);
  ASSERT_TRUE(q.device_holders);
  EXPECT_EQ(q.device_holders->others, 1);
  EXPECT_DOUBLE_EQ(q.device_holders->other_bytes, 2.5e9);
  EXPECT_EQ(q.device_holders->listed, 2);
  EXPECT_EQ(nlohmann::json(q), nlohmann::json(r));
  r.device_holders->others = -1;  // a count below zero is a broken file, named as such
  write_result(r, path("bad.json"));
  EXPECT_THROW(read_result(path("bad.json")), std::runtime_error);
}

TEST_F(ProtocolTest, NoiseScaleAndConvergeTrialsRoundTripWithTheirNonFiniteValues) {
  TrialPlan p;
  p.setup.workload = "gpt-mini";
  p.setup.lr = 3e-4;
  p.setup.data_order = 2;
  p.noise.on = true;
  p.noise.burn_in_seconds = 5;
  p.noise.max_steps = 100;
  write_plan(p, path("plan.json"));
  TrialPlan q = read_plan(path("plan.json"));
  EXPECT_TRUE(q.noise.on);
  EXPECT_FALSE(q.converge.on);
  EXPECT_DOUBLE_EQ(q.noise.burn_in_seconds, 5);
  EXPECT_EQ(q.noise.max_steps, 100);
  EXPECT_DOUBLE_EQ(q.setup.learning_rate(), 3e-4);
  EXPECT_NE(q.setup.data_seed(), q.setup.seed);  // another order of the same data
  EXPECT_EQ(nlohmann::json(q), nlohmann::json(p));

  TrialResult r = sample_result();
  NoiseRecord n;
  n.micro_batch = 8;
  n.micro_batches = 4;
  n.steps = {{10.5, 3.25}, {std::nan(""), 1.0}};
  n.dropped = 1;
  n.stopped = "target";
  n.weights = "random init";
  n.burn_in_steps = 95;
  r.noise = n;
  ConvergeRecord c;
  c.points = {{32, 0.1, 5.5}, {64, 0.2, std::numeric_limits<double>::infinity()}};
  c.stopped = "non_finite";
  c.lr = 1e-3;
  c.switched_at = {64};
  c.val_points = {{0, 0, 6.0}, {64, 0.2, 4.5}};
  c.val_samples = 512;
  c.val_seconds = 0.05;
  c.val_source = "the task's val_dataset() (TensorDataset, 512 samples)";
  r.converge = c;
  write_result(r, path("result.json"));
  const TrialResult back = read_result(path("result.json"));
  ASSERT_TRUE(back.noise && back.converge);
  EXPECT_EQ(back.noise->steps.size(), 2u);
  EXPECT_TRUE(std::isnan(back.noise->steps[1].small_sq));  // null in JSON, NaN again
  EXPECT_EQ(back.noise->burn_in_steps, 95);
  EXPECT_EQ(back.converge->points[1].samples, 64);
  EXPECT_TRUE(std::isnan(back.converge->points[1].loss));
  ASSERT_EQ(back.converge->val_points.size(), 2u);
  EXPECT_DOUBLE_EQ(back.converge->val_points[1].loss, 4.5);
  EXPECT_EQ(back.converge->val_samples, 512);
  EXPECT_EQ(nlohmann::json(back), nlohmann::json(r));
}

TEST_F(ProtocolTest, APlanIsANoiseScaleOrAConvergeTrialNotBothAndInRange) {
  auto plan_with = [&](const std::string& extra) {
    std::ofstream(path("p.json")) << R"({"schema": "autotune.plan/1", "workload": "mlp", "config": {})" << extra << "}";
    return path("p.json");
  };
  EXPECT_THROW(read_plan(plan_with(R"(, "noise": {}, "converge": {})")), std::runtime_error);
  EXPECT_THROW(read_plan(plan_with(R"(, "noise": {"min_steps": 1})")), std::runtime_error);
  EXPECT_THROW(read_plan(plan_with(R"(, "converge": {"max_seconds": 0})")), std::runtime_error);
  EXPECT_TRUE(read_plan(plan_with(R"(, "converge": {"target_loss": 2.5})")).converge.on);
  // A batch ramp: [from_samples, grad_accum, lr] phases, the first from 0, samples rising.
  const TrialPlan ramp = read_plan(plan_with(R"(, "converge": {"ramp": [[0, 1, 0.001], [4096, 2, 0.0014]]})"));
  ASSERT_EQ(ramp.converge.ramp.size(), 2u);
  EXPECT_EQ(ramp.converge.ramp[1].from_samples, 4096);
  EXPECT_EQ(ramp.converge.ramp[1].grad_accum, 2);
  EXPECT_DOUBLE_EQ(ramp.converge.ramp[1].lr, 0.0014);
  write_plan(ramp, path("again.json"));
  EXPECT_EQ(read_plan(path("again.json")).converge.ramp.size(), 2u);
  // The held-out loss: its cadence, how many samples, where from, and whether the user asked for it.
  const TrialPlan val = read_plan(plan_with(
      R"(, "converge": {"val_every": 2048, "val_samples": 256, "val_data": "/d/val.bin", "val_needed": true})"));
  EXPECT_EQ(val.converge.val_every, 2048);
  EXPECT_EQ(val.converge.val_samples, 256);
  EXPECT_EQ(val.converge.val_data, "/d/val.bin");
  EXPECT_TRUE(val.converge.val_needed);
  write_plan(val, path("val.json"));
  EXPECT_EQ(nlohmann::json(read_plan(path("val.json"))), nlohmann::json(val));
  EXPECT_THROW(read_plan(plan_with(R"(, "converge": {"val_every": -1})")), std::runtime_error);
  EXPECT_THROW(read_plan(plan_with(R"(, "converge": {"val_every": 10, "val_samples": 0})")), std::runtime_error);
  for (const char* bad : {R"([[1, 1, 0.001]])", R"([[0, 1, 0.001], [0, 2, 0.001]])", R"([[0, 0, 0.001]])", R"([[0, 1, -1]])",
                          R"([[0, 1]])"})
    EXPECT_THROW(read_plan(plan_with(std::string(R"(, "converge": {"ramp": )") + bad + "}")), std::runtime_error) << bad;
}

TEST_F(ProtocolTest, AMemoryProbeAndTheDeviceMemoryRecordRoundTrip) {
  auto plan_with = [&](const std::string& extra) {
    std::ofstream(path("p.json")) << R"({"schema": "autotune.plan/1", "workload": "mlp", "config": {})" << extra << "}";
    return path("p.json");
  };
  const TrialPlan p = read_plan(plan_with(R"(, "memory_probe": {"steps": 4}, "memory_cap": "64M")"));
  EXPECT_TRUE(p.memory_probe.on);
  EXPECT_EQ(p.memory_probe.steps, 4);
  EXPECT_EQ(p.setup.memory_cap, "64M");
  EXPECT_THROW(read_plan(plan_with(R"(, "memory_probe": {"steps": 1})")), std::runtime_error);
  EXPECT_THROW(read_plan(plan_with(R"(, "memory_probe": {}, "noise": {})")), std::runtime_error);
  EXPECT_THROW(read_plan(plan_with(R"(, "memory_cap": "12Q")")), std::exception);
  write_plan(p, path("p2.json"));
  EXPECT_TRUE(read_plan(path("p2.json")).memory_probe.on);

  TrialResult r;
  r.status = TrialStatus::oom;
  MemoryRecord m;
  m.allocator = "cpu-counting";
  m.capacity_bytes = 64 << 20;
  m.param_numels = {10, 3};
  m.param_bytes = 52;
  m.grad_bytes = 52;
  m.optimizer_bytes = 112;
  m.forward_peak = 1000;
  m.backward_peak = 1200;
  m.forward_backward_peak = 1200;
  m.optimizer_peak = 900;
  m.failed_request = 4096;
  m.ooms = 1;
  r.memory = m;
  write_result(r, path("r.json"));
  const TrialResult back = read_result(path("r.json"));
  ASSERT_TRUE(back.memory.has_value());
  EXPECT_EQ(back.memory->param_numels, m.param_numels);
  EXPECT_EQ(back.memory->states_bytes(), 216);
  EXPECT_EQ(back.memory->backward_peak, 1200);
  EXPECT_EQ(back.memory->peak(), 1200);
  EXPECT_EQ(back.memory->failed_request, 4096);
  EXPECT_EQ(back.memory->allocator, "cpu-counting");
}

TEST_F(ProtocolTest, ADataParallelResultSaysWhetherTheHostTimedItsCollectives) {
  TrialResult r = sample_result();
  DistInfo d;
  d.world = 2;
  d.backend = "nccl";
  for (int k = 0; k < 2; ++k) {
    RankStats s;
    s.rank = k;
    s.comm_timed = k == 0;  // one rank that could not time them makes the trial's figures untimed
    s.comm_ms_per_step = 2;
    d.ranks.push_back(s);
  }
  r.dist = d;
  write_result(r, path("dist.json"));
  const TrialResult q = read_result(path("dist.json"));
  ASSERT_TRUE(q.dist);
  EXPECT_EQ(nlohmann::json(*q.dist), nlohmann::json(d));
  EXPECT_FALSE(q.dist->comm_timed());
  EXPECT_FALSE(nlohmann::json::parse(read_file(path("dist.json")))["dist"]["comm_timed"].get<bool>());
  // Results from before the field: every rank timed (Gloo was the only backend that had run).
  auto j = nlohmann::json::parse(read_file(path("dist.json")));
  for (auto& k : j["dist"]["ranks"]) k.erase("comm_timed");
  write_file_atomic(path("older.json"), j.dump());
  EXPECT_TRUE(read_result(path("older.json")).dist->comm_timed());
}

TEST_F(ProtocolTest, ATracedTrialsProfileRoundTripsTyped) {
  TrialResult r = sample_result();
  ProfileSummary p;
  p.mode = "cupti";
  p.steps = 5;
  p.valid = p.gpu = true;
  p.busy_share = 0.8;
  p.host_wait_share = 0.15;
  KernelStat gemm;
  gemm.name = "sm90_xmma_gemm";
  gemm.count = 40;
  gemm.total_ms = 12.5;
  gemm.share = 0.6;
  gemm.mean_us = 312.5;
  gemm.grid = {132, 1, 1};
  gemm.block = {384, 1, 1};
  gemm.geometries = 2;
  gemm.threads_per_call = 50688;
  gemm.phases = {{"forward", 0.25}, {"backward", 0.75}};
  p.top_kernels = {gemm};
  p.kernel_classes = {{"matmul / conv", 8, 2.5, 0.6}, {"elementwise", 30, 1.0, 0.24}};
  p.syncs = {{"cudaStreamSynchronize", 5, 1.0}};
  p.copies = {{"HtoD pinned", 10, 1 << 20, 0.1, 10.5}};
  p.phase_ms = {{"forward", 3.0}, {"backward", 5.0}};
  p.gpu_phase_ms = {{"forward", 2.5}};
  p.mfu = 0.42;
  p.verdict = "compute-bound";
  p.verdict_knobs = {"precision"};
  p.loader = LoaderProfile{2, 0.75, 0.5};
  r.profile = p;
  write_result(r, path("traced.json"));
  const TrialResult q = read_result(path("traced.json"));
  ASSERT_TRUE(q.profile);
  EXPECT_EQ(nlohmann::json(*q.profile), nlohmann::json(p));
  EXPECT_EQ(q.profile->top_kernels.at(0).name, "sm90_xmma_gemm");
  EXPECT_EQ(q.profile->top_kernels.at(0).grid, (std::array<std::int32_t, 3>{132, 1, 1}));
  EXPECT_DOUBLE_EQ(q.profile->top_kernels.at(0).phases.at("backward"), 0.75);
  ASSERT_EQ(q.profile->kernel_classes.size(), 2u);
  EXPECT_DOUBLE_EQ(q.profile->kernel_classes.at(1).ms_per_step, 1.0);
  EXPECT_DOUBLE_EQ(q.profile->host_wait_share, 0.15);
  ASSERT_TRUE(q.profile->loader);
  EXPECT_DOUBLE_EQ(q.profile->loader->utilisation, 0.75);
  EXPECT_FALSE(read_result(path("traced.json")).windows.empty());  // the rest of the result is intact
  // An older profile without the launch fields reads with their defaults; a geometry that fits no int is
  // a one-line error naming the field.
  auto j = nlohmann::json::parse(read_file(path("traced.json")));
  auto& k = j["profile"]["top_kernels"][0];
  for (const char* f : {"mean_us", "grid", "block", "geometries", "threads_per_call", "phases"}) k.erase(f);
  write_file_atomic(path("older.json"), j.dump());
  const KernelStat old = read_result(path("older.json")).profile->top_kernels.at(0);
  EXPECT_EQ(old.count, 40);
  EXPECT_EQ(old.grid[0], 0);
  EXPECT_TRUE(old.phases.empty());
  k["grid"] = {3e9, 1, 1};
  write_file_atomic(path("huge.json"), j.dump());
  try {
    read_result(path("huge.json"));
    ADD_FAILURE() << "a grid of 3e9 blocks was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'grid' 3000000000.0 is out of range"), std::string::npos) << e.what();
  }
  r.profile.reset();
  write_result(r, path("untraced.json"));
  EXPECT_FALSE(nlohmann::json::parse(read_file(path("untraced.json"))).contains("profile"));
}

TEST_F(ProtocolTest, NonFiniteLossesSurviveTheRoundTrip) {
  TrialResult r = sample_result();
  r.losses = {2.0, std::nan(""), std::numeric_limits<double>::infinity(), 1.5};
  write_result(r, path("nan.json"));
  EXPECT_NE(read_file(path("nan.json")).find("null"), std::string::npos);  // JSON has no NaN
  const TrialResult q = read_result(path("nan.json"));
  ASSERT_EQ(q.losses.size(), 4u);
  EXPECT_EQ(q.losses[0], 2.0);
  EXPECT_TRUE(std::isnan(q.losses[1]));
  EXPECT_TRUE(std::isnan(q.losses[2]));  // any non-finite value reads back as NaN: still non-finite
  EXPECT_EQ(q.losses[3], 1.5);
}

TEST_F(ProtocolTest, PlanAcceptsNumbersForKnobValues) {
  const auto j = nlohmann::json::parse(R"({"schema":"autotune.plan/1","workload":"mlp","config":{"batch_size":64}})");
  EXPECT_EQ(j.get<TrialPlan>().config.get("batch_size"), "64");
}

TEST_F(ProtocolTest, ErrorsNameTheFileAndTheProblem) {
  EXPECT_THROW_MSG(read_plan(path("absent.json")), std::runtime_error, path("absent.json") + ": cannot open for reading");
  write_file_atomic(path("wrong.json"), R"({"schema":"autotune.plan/9","workload":"mlp"})");
  EXPECT_THROW_MSG(read_plan(path("wrong.json")), std::runtime_error,
                   path("wrong.json") + ": schema 'autotune.plan/9' is not supported; expected 'autotune.plan/1'");
  write_file_atomic(path("dev.json"), R"({"schema":"autotune.plan/1","workload":"mlp","device":"tpu"})");
  EXPECT_THROW_MSG(read_plan(path("dev.json")), std::runtime_error,
                   path("dev.json") + ": device 'tpu' is not allowed; allowed: auto, cpu, cuda");
  write_file_atomic(path("knob.json"), R"({"schema":"autotune.plan/1","workload":"mlp","config":{"threds":"1"}})");
  EXPECT_THROW_MSG(
      read_plan(path("knob.json")), std::runtime_error,
      path("knob.json") +
          ": unknown knob 'threds'; known knobs: batch_size, threads, precision, optimizer_impl, zero_grad, grad_accum, log_every, checkpointing, memory_format, pin_memory, decode, num_workers, prefetch, augment_device, cuda_graphs, cudnn_benchmark, ranks, bucket_mb, first_bucket_mb, "
      "grad_as_bucket_view, static_graph, broadcast_buffers, comm_hook, compile (did you mean 'threads'?)");
  write_file_atomic(path("trunc.json"), R"({"schema":"autotune.result/1","status":"ok")");
  EXPECT_THROW(read_result(path("trunc.json")), std::runtime_error);
}

TEST(TrialStatus, NamesRoundTrip) {
  for (auto s :
       {TrialStatus::ok, TrialStatus::oom, TrialStatus::non_finite, TrialStatus::crash, TrialStatus::timeout, TrialStatus::error})
    EXPECT_EQ(trial_status_from_string(to_string(s)), s);
  EXPECT_THROW(trial_status_from_string("fine"), std::invalid_argument);
  for (auto k : {TrialKind::baseline, TrialKind::search, TrialKind::remeasure, TrialKind::confirm})
    EXPECT_EQ(trial_kind_from_string(to_string(k)), k);
}

}  // namespace
}  // namespace autotune
