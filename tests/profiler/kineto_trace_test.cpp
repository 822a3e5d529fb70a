// The trace reader (profiler/kineto_trace.h): a trace autotune wrote reads back into the same analysis, and a
// trace shaped as torch.profiler writes it (kineto's names and fields) reads into the records the CUPTI collector
// would have produced.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "profiler/analysis.h"
#include "profiler/kineto_trace.h"
#include "profiler/trace_export.h"
#include "tests/profiler/sample_stream.h"

namespace autotune::prof {
namespace {

using nlohmann::json;

AnalysisOptions options() {
  AnalysisOptions o;
  o.flops_per_sample = 1e9;
  o.samples_per_step = 64;
  o.precision = "amp_bf16";
  return o;
}

TEST(KinetoTrace, ATraceAutotuneWroteAnalysesAsTheStreamItCameFrom) {
  const ActivityStream s = testing_stream::training_like(4);
  const ProfileSummary direct = analyze(s, options());
  const ActivityStream back = read_kineto_trace(json::parse(trace_text(chrome_trace(s))));
  EXPECT_EQ(back.device_name, s.device_name);
  EXPECT_EQ(back.records.size(), s.records.size());
  const ProfileSummary p = analyze(back, options());
  ASSERT_TRUE(p.valid) << p.invalid_reason;
  EXPECT_EQ(p.steps, direct.steps);
  EXPECT_NEAR(p.step_ms, direct.step_ms, 1e-6);
  EXPECT_NEAR(p.busy_share, direct.busy_share, 1e-6);
  EXPECT_NEAR(p.host_wait_share, direct.host_wait_share, 1e-6);
  EXPECT_DOUBLE_EQ(p.kernels_per_step, direct.kernels_per_step);
  EXPECT_NEAR(p.launch_delay_us, direct.launch_delay_us, 1e-3);
  ASSERT_EQ(p.top_kernels.size(), direct.top_kernels.size());
  for (size_t i = 0; i < p.top_kernels.size(); ++i) {
    EXPECT_EQ(p.top_kernels[i].name, direct.top_kernels[i].name);
    EXPECT_EQ(p.top_kernels[i].phases, direct.top_kernels[i].phases);
  }
  ASSERT_EQ(p.syncs.size(), direct.syncs.size());
  EXPECT_EQ(p.syncs[0].what, direct.syncs[0].what);
  ASSERT_EQ(p.copies.size(), direct.copies.size());
  for (size_t i = 0; i < p.copies.size(); ++i) {
    EXPECT_EQ(p.copies[i].kind, direct.copies[i].kind);
    EXPECT_EQ(p.copies[i].bytes, direct.copies[i].bytes);
  }
  ASSERT_EQ(p.phase_ms.size(), direct.phase_ms.size());
  for (const auto& [phase, ms] : direct.phase_ms) EXPECT_NEAR(p.phase_ms.at(phase), ms, 1e-6) << phase;
  EXPECT_EQ(p.gpu_phase_ms.size(), direct.gpu_phase_ms.size());
  EXPECT_NEAR(p.mfu, direct.mfu, 1e-9);
  EXPECT_EQ(p.verdict, direct.verdict);
  EXPECT_EQ(p.verdict_knobs, direct.verdict_knobs);
}

/// A complete event as torch.profiler (kineto) writes one: absolute µs with three decimals.
json event(const std::string& cat, const std::string& name, double ts_us, double dur_us, json pid, json tid, json args) {
  return {{"ph", "X"}, {"cat", cat}, {"name", name}, {"pid", pid}, {"tid", tid}, {"ts", ts_us}, {"dur", dur_us}, {"args", args}};
}

/// Two steps as torch.profiler traces the Python worker's: ProfilerStep#N and phase annotations on the training
/// thread 77, a user's own annotation, an aten op, a kernel launched from forward, one from the autograd thread 78
/// (backward), a Triton kernel through the driver API, and the loss read (pageable D2H + stream sync).
json torch_profiler_trace() {
  json ev = json::array();
  const double base = 4891459096000.125;  // kineto's µs: large, with a fractional part
  int corr = 100;
  for (int st = 0; st < 2; ++st) {
    const double t = base + st * 10000.0;
    ev.push_back(event("user_annotation", "ProfilerStep#" + std::to_string(st), t, 10000, 9, 77, {{"External id", 1}}));
    ev.push_back(event("user_annotation", "forward", t + 1000, 3000, 9, 77, {{"External id", 2}}));
    ev.push_back(event("user_annotation", "my_block", t + 1100, 500, 9, 77, {{"External id", 3}}));
    ev.push_back(event("cpu_op", "aten::mm", t + 1200, 50, 9, 77, {{"External id", 4}}));
    ev.push_back(event("cuda_runtime", "cudaLaunchKernel", t + 1210, 5, 9, 77, {{"cbid", 211}, {"correlation", corr}}));
    ev.push_back(event("kernel", "sm90_xmma_gemm_bf16bf16_bf16f32", t + 1300, 2000, 0, 7,
                       {{"device", 0}, {"stream", 7}, {"correlation", corr++}, {"grid", {132, 1, 1}}, {"block", {384, 1, 1}}}));
    ev.push_back(event("gpu_user_annotation", "forward", t + 1300, 2000, 0, 7, json::object()));
    ev.push_back(event("user_annotation", "backward", t + 4000, 4000, 9, 77, json::object()));
    ev.push_back(event("cuda_driver", "cuLaunchKernel", t + 4100, 6, 9, 78, {{"cbid", 307}, {"correlation", corr}}));
    ev.push_back(event("kernel", "triton_poi_fused_add_0", t + 4200, 1500, 0, 7,
                       {{"device", 0}, {"stream", 7}, {"correlation", corr++}, {"grid", {64, 1, 1}}, {"block", {128, 1, 1}}}));
    ev.push_back(event("user_annotation", "other", t + 9000, 900, 9, 77, json::object()));
    ev.push_back(event("cuda_runtime", "cudaMemcpyAsync", t + 9000, 10, 9, 77, {{"cbid", 41}, {"correlation", corr}}));
    ev.push_back(event("gpu_memcpy", "Memcpy DtoH (Device -> Pageable)", t + 9005, 2, 0, 7,
                       {{"device", 0}, {"stream", 7}, {"correlation", corr++}, {"bytes", 4}, {"memory bandwidth (GB/s)", 0.002}}));
    ev.push_back(event("cuda_runtime", "cudaStreamSynchronize", t + 9011, 20, 9, 77, {{"cbid", 131}, {"correlation", corr}}));
    ev.push_back(event("cuda_sync", "Stream Sync", t + 9012, 18, 0, 7, {{"cuda_sync_kind", "Stream Sync"}, {"stream", 7}, {"correlation", corr++}, {"device", 0}}));
  }
  ev.push_back({{"ph", "s"}, {"cat", "ac2g"}, {"name", "ac2g"}, {"id", 100}, {"pid", 9}, {"tid", 77}, {"ts", base + 1210}});
  ev.push_back({{"ph", "X"}, {"cat", "Trace"}, {"name", "PyTorch Profiler (0)"}, {"pid", "Spans"}, {"tid", "PyTorch Profiler"}, {"ts", base}, {"dur", 20000}});
  return {{"schemaVersion", 1},
          {"deviceProperties", {{{"id", 0}, {"name", "NVIDIA H100 80GB HBM3"}, {"computeMajor", 9}}}},
          {"baseTimeNanoseconds", 1790857026000000000LL},
          {"traceEvents", ev}};
}

TEST(KinetoTrace, TorchProfilerEventsReadAsTheCollectorsRecords) {
  const ActivityStream s = read_kineto_trace(torch_profiler_trace());
  EXPECT_EQ(s.device_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(s.pid, 9);
  std::map<ActKind, int> kinds;
  std::set<std::string> ranges;
  for (const auto& a : s.records) {
    ++kinds[a.kind];
    if (a.kind == ActKind::range) ranges.insert(a.name);
    if (a.kind == ActKind::memcpy) {
      EXPECT_EQ(a.copy_kind, "DtoH");
      EXPECT_FALSE(a.host_pinned);
      EXPECT_EQ(a.bytes, 4);
    }
    if (a.kind == ActKind::sync) {
      EXPECT_EQ(a.name, "stream_synchronize");
    }
    if (a.kind == ActKind::kernel && a.name.rfind("sm90", 0) == 0) {
      EXPECT_EQ(a.grid[0], 132);
      EXPECT_EQ(a.block[0], 384);
      EXPECT_EQ(a.stream, 7);
      EXPECT_EQ(a.end_ns - a.start_ns, 2000000);  // µs with fractions kept to the nanosecond
    }
  }
  EXPECT_EQ(ranges, (std::set<std::string>{"step", "forward", "backward", "other"}));  // not my_block, not the GPU copy
  EXPECT_EQ(kinds[ActKind::kernel], 4);
  EXPECT_EQ(kinds[ActKind::runtime], 8);  // cuda_runtime and cuda_driver
  EXPECT_EQ(kinds[ActKind::sync], 2);
  EXPECT_EQ(s.zero_timestamps, 0);

  const ProfileSummary p = analyze(s, options());
  ASSERT_TRUE(p.valid) << p.invalid_reason;
  EXPECT_EQ(p.steps, 2);
  EXPECT_NEAR(p.step_ms, 10.0, 1e-9);
  EXPECT_DOUBLE_EQ(p.kernels_per_step, 2.0);
  ASSERT_EQ(p.syncs.size(), 1u);  // the loss read: one sync per step, its CUPTI record not counted twice
  EXPECT_EQ(p.syncs[0].what, "D2H copy to pageable memory + cudaStreamSynchronize (.item())");
  EXPECT_DOUBLE_EQ(p.syncs_per_step, 1.0);
  EXPECT_NEAR(p.phase_ms.at("forward"), 3.0, 1e-9);
  EXPECT_NEAR(p.phase_ms.at("backward"), 4.0, 1e-9);
  EXPECT_EQ(p.phase_ms.count("my_block"), 0u);
  // launched from the training thread in forward, and from the autograd thread while the training thread was in backward
  EXPECT_NEAR(p.gpu_phase_ms.at("forward"), 2.0, 1e-9);
  EXPECT_NEAR(p.gpu_phase_ms.at("backward"), 1.5, 1e-9);
  EXPECT_NEAR(p.busy_share, (2.0 + 1.5 + 0.002) / 10.0, 1e-6);
}

TEST(KinetoTrace, GlooCollectivesOnTheirThreadAreTheCommunication) {
  json t = torch_profiler_trace();
  const double base = 4891459096000.125;
  for (int st = 0; st < 2; ++st) {  // two buckets per step on Gloo's thread: one under backward, one after it
    const double s0 = base + st * 10000.0;
    t["traceEvents"].push_back(event("user_annotation", "gloo:all_reduce", s0 + 6000, 1000, 9, 90, json::object()));
    t["traceEvents"].push_back(event("user_annotation", "gloo:all_reduce", s0 + 8000, 2000, 9, 90, json::object()));
    t["traceEvents"].push_back(event("cpu_op", "c10d::allreduce_", s0 + 5990, 20, 9, 77, json::object()));  // the launch only
  }
  const ActivityStream s = read_kineto_trace(t);
  int comm = 0;
  for (const auto& a : s.records)
    if (a.kind == ActKind::comm) {
      ++comm;
      EXPECT_EQ(a.name, "gloo:allreduce");
    }
  EXPECT_EQ(comm, 4);
  const ProfileSummary p = analyze(s, options());
  ASSERT_TRUE(p.comm.has_value());
  EXPECT_EQ(p.comm->source, "host collectives");
  EXPECT_DOUBLE_EQ(p.comm->calls_per_step, 2.0);
  EXPECT_NEAR(p.comm->ms_per_step, 3.0, 1e-9);
  EXPECT_NEAR(p.comm->hidden_share, 1.0 / 3.0, 1e-9);  // the first bucket: done before the last one was launched
}

TEST(KinetoTrace, AUsersTraceWithoutStepsIsOneWindowAndTheirAnnotationsAreNotPhases) {
  json t = torch_profiler_trace();
  json kept = json::array();
  for (const auto& e : t["traceEvents"])
    if (e.value("name", std::string()).rfind("ProfilerStep#", 0) != 0) kept.push_back(e);
  t["traceEvents"] = kept;
  const ActivityStream s = read_kineto_trace(t);
  for (const auto& a : s.records) EXPECT_NE(a.kind, ActKind::range) << a.name;  // no step thread: no phases either
  const ProfileSummary p = analyze(s, options());
  EXPECT_EQ(p.steps, 1);
}

TEST(KinetoTrace, LostTimestampsAndBadFilesSaySo) {
  json t = torch_profiler_trace();
  for (auto& e : t["traceEvents"])
    if (e.value("cat", std::string()) == "kernel") {
      e["ts"] = 0;
      break;
    }
  EXPECT_EQ(read_kineto_trace(t).zero_timestamps, 1);
  EXPECT_FALSE(analyze(read_kineto_trace(t), options()).valid);

  EXPECT_THROW(read_kineto_trace(json::object({{"events", json::array()}})), TraceFormatError);
  const auto dir = std::filesystem::temp_directory_path() / ("kineto_trace_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "bad.json") << "{ not json";
  try {
    read_kineto_trace_file((dir / "bad.json").string());
    ADD_FAILURE() << "a file that is not JSON was read";
  } catch (const TraceFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json: not JSON"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_kineto_trace_file((dir / "trace.json.gz").string()), TraceFormatError);
  EXPECT_THROW(read_kineto_trace_file((dir / "missing.json").string()), TraceFormatError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace autotune::prof
