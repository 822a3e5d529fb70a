// The profile analysis on hand-built activity streams with known answers, and the trace format.
#include "profiler/analysis.h"

#include <gtest/gtest.h>

#include "profiler/cupti_collector.h"
#include "profiler/trace_export.h"

#include <iostream>
#include <regex>
#include "tests/profiler/sample_stream.h"

namespace autotune::prof {
namespace {

using testing_stream::activity;

Activity kernel(std::int64_t a, std::int64_t b, std::uint32_t corr, const std::string& name = "gemm") {
  return activity(ActKind::kernel, name, a, b, corr, 0);
}
Activity call(const std::string& name, std::int64_t a, std::int64_t b, std::uint32_t corr, std::int64_t tid = 1) {
  return activity(ActKind::runtime, name, a, b, corr, tid);
}
Activity range(const std::string& name, std::int64_t a, std::int64_t b, int step) {
  Activity r = activity(ActKind::range, name, a, b, 0, 1);
  r.step = step;
  return r;
}
Activity copy(const std::string& kind, bool pinned, std::int64_t bytes, std::int64_t a, std::int64_t b, std::uint32_t corr) {
  Activity c = activity(ActKind::memcpy, "Memcpy " + kind, a, b, corr, 0);
  c.copy_kind = kind;
  c.host_pinned = pinned;
  c.bytes = bytes;
  return c;
}

TEST(Analysis, IdleSplitFollowsHtasDefinitions) {
  ActivityStream s;
  s.records = {range("step", 0, 1000, 0),
               call("cudaLaunchKernel", 50, 90, 1),
               kernel(100, 300, 1),  // GPU idle from 0, launched after: host-wait 100
               call("cudaLaunchKernel", 95, 99, 2),
               kernel(310, 500, 2),  // 10 ns gap, queued long before: kernel-wait
               call("cudaLaunchKernel", 200, 210, 3),
               kernel(600, 700, 3),  // 100 ns gap, queued before: other
               call("cudaLaunchKernel", 750, 760, 4),
               kernel(800, 900, 4)};  // launched after the GPU went idle: host-wait
  const ProfileSummary p = analyze(s, {});
  ASSERT_TRUE(p.valid) << p.invalid_reason;
  EXPECT_EQ(p.steps, 1);
  EXPECT_DOUBLE_EQ(p.busy_share, 0.590);
  EXPECT_DOUBLE_EQ(p.host_wait_share, 0.300);  // 100 + 100 + the trailing 100
  EXPECT_DOUBLE_EQ(p.kernel_wait_share, 0.010);
  EXPECT_DOUBLE_EQ(p.other_idle_share, 0.100);
  EXPECT_DOUBLE_EQ(p.kernels_per_step, 4);
  EXPECT_DOUBLE_EQ(p.launch_delay_us, 0.211);  // delays 10, 40, 211, 390 ns: the upper median
  EXPECT_DOUBLE_EQ(p.short_kernel_share, 0);
}

TEST(Analysis, ExternalCorrelationAttributesGpuWorkToThePhaseThatLaunchedIt) {
  ActivityStream s;
  Activity fwd = range("forward", 0, 400, 0), bwd = range("backward", 400, 900, 0);
  fwd.external_id = 11;
  bwd.external_id = 12;
  Activity l1 = call("cudaLaunchKernel", 10, 20, 1), l2 = call("cudaLaunchKernel", 410, 420, 2),
           l3 = call("cudaLaunchKernel", 420, 430, 3);
  l1.external_id = 11;
  l2.external_id = 12;
  l3.external_id = 12;
  // The forward kernel runs late, inside the backward's host range: time alone would misattribute it.
  s.records = {range("step", 0, 1000, 0), fwd, bwd, l1, l2, l3, kernel(450, 550, 1), kernel(550, 750, 2), kernel(750, 800, 3)};
  const ProfileSummary p = analyze(s, {});
  EXPECT_DOUBLE_EQ(p.gpu_phase_ms.at("forward"), 100e-6);
  EXPECT_DOUBLE_EQ(p.gpu_phase_ms.at("backward"), 250e-6);
}

TEST(Analysis, LaunchesFromAThreadWithoutPhaseIdsTakeThePhaseWhoseRangeHoldsTheLaunch) {
  // CUPTI keeps external correlation ids per thread; a CUDA backward runs on the autograd engine's device
  // thread (tid 2 here), whose launches carry no id while the training thread (tid 1) waits in "backward".
  ActivityStream s;
  Activity fwd = range("forward", 0, 400, 0), bwd = range("backward", 400, 900, 0);
  fwd.external_id = 11;
  bwd.external_id = 12;
  Activity l1 = call("cudaLaunchKernel", 10, 20, 1);
  l1.external_id = 11;
  s.records = {range("step", 0, 1000, 0), fwd, bwd, l1, kernel(30, 130, 1),
               call("cudaLaunchKernel", 450, 460, 2, /*tid=*/2), kernel(470, 770, 2),
               call("cudaLaunchKernel", 950, 960, 3, /*tid=*/2), kernel(965, 975, 3)};  // after every phase range
  const ProfileSummary p = analyze(s, {});
  EXPECT_DOUBLE_EQ(p.gpu_phase_ms.at("forward"), 100e-6);
  EXPECT_DOUBLE_EQ(p.gpu_phase_ms.at("backward"), 300e-6);
  EXPECT_EQ(p.gpu_phase_ms.size(), 2u);  // the last kernel's launch lies in no phase: unattributed
}

TEST(Analysis, TopKernelsCarryTimePerCallLaunchGeometryAndThePhasesThatLaunchedThem) {
  // One kernel name, two tensors: ATen's generic elementwise kernel covers 128 threads × 4 elements per
  // block, so a residual add over 32×1024×768 elements launches 49,152 blocks and the tied embedding's
  // gradient (50,304×768) 75,456. Two steps: per step 2 residual adds in forward, 1 gradient add in backward.
  ActivityStream s;
  Activity fwd0 = range("forward", 0, 400, 0), bwd0 = range("backward", 400, 1000, 0);
  Activity fwd1 = range("forward", 1000, 1400, 1), bwd1 = range("backward", 1400, 2000, 1);
  fwd0.external_id = fwd1.external_id = 1;
  bwd0.external_id = bwd1.external_id = 2;
  s.records = {range("step", 0, 1000, 0), range("step", 1000, 2000, 1), fwd0, bwd0, fwd1, bwd1};
  const std::string add = "elementwise_kernel<128, 4, gpu_kernel_impl<CUDAFunctor_add<float>>>";
  std::uint32_t corr = 0;
  auto launch = [&](std::int64_t t, std::int64_t dur, std::uint64_t phase, std::int32_t blocks) {
    Activity l = call("cudaLaunchKernel", t, t + 5, ++corr), k = kernel(t + 10, t + 10 + dur, corr, add);
    l.external_id = phase;
    k.grid = {blocks, 1, 1};
    k.block = {128, 1, 1};
    s.records.push_back(l);
    s.records.push_back(k);
  };
  for (std::int64_t step : {0, 1000}) {
    launch(step + 10, 50, 1, 49152);
    launch(step + 100, 50, 1, 49152);
    launch(step + 500, 100, 2, 75456);
  }
  s.records.push_back(kernel(1900, 1950, 99, "gemm"));  // no launch call seen, no geometry: no phase, zeros
  const ProfileSummary p = analyze(s, {});
  ASSERT_TRUE(p.valid) << p.invalid_reason;
  ASSERT_EQ(p.top_kernels.size(), 2u);
  const KernelStat& k = p.top_kernels[0];
  EXPECT_EQ(k.name, add);
  EXPECT_EQ(k.count, 6);
  EXPECT_NEAR(k.mean_us, 0.4 / 6, 1e-12);  // 400 ns over 6 calls
  EXPECT_EQ(k.grid, (std::array<std::int32_t, 3>{49152, 1, 1}));  // the geometry most calls used
  EXPECT_EQ(k.block, (std::array<std::int32_t, 3>{128, 1, 1}));
  EXPECT_EQ(k.geometries, 2);
  EXPECT_DOUBLE_EQ(k.threads_per_call, (4 * 49152.0 + 2 * 75456.0) * 128 / 6);
  EXPECT_DOUBLE_EQ(k.phases.at("forward"), 0.5);  // 200 of its 400 ns
  EXPECT_DOUBLE_EQ(k.phases.at("backward"), 0.5);
  const KernelStat& g = p.top_kernels[1];
  EXPECT_EQ(g.grid[0], 0);
  EXPECT_EQ(g.geometries, 0);
  EXPECT_TRUE(g.phases.empty());
  // The trace carries the geometry as PyTorch's profiler writes it.
  const nlohmann::json trace = chrome_trace(s);
  bool seen = false;
  for (const auto& e : trace["traceEvents"])
    if (e.value("name", "") == add && e.value("cat", "") == "kernel") {
      EXPECT_EQ(e["args"]["block"], nlohmann::json({128, 1, 1}));
      seen = true;
    }
  EXPECT_TRUE(seen);
}

TEST(Analysis, KernelNamesAreClassifiedAsTheH100ProfilesNamedThem) {
  // Names as CUPTI reported them in the H100 profiles of resnet50 and gpt2-124m (docs/device-runs/).
  EXPECT_EQ(kernel_class("nvjet_sm90_tst_192x192_64x4_2x1_v_bz_coopB_TNN"), "matmul / conv");
  EXPECT_EQ(kernel_class("sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64"), "matmul / conv");
  EXPECT_EQ(kernel_class("_ZN2at6native50batch_norm_collect_statistics_channels_last_kernelINS0_3VarEN3c108BFloat16EfLi4EEEvPKT0_"),
            "normalization");
  EXPECT_EQ(kernel_class("_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_15gpu_kernel_implINS0_15CUDAFunctor_addIfEEEEvRNS_"),
            "elementwise");
  EXPECT_EQ(kernel_class("_ZN2at6native29vectorized_elementwise_kernelILi8EZNS0_25bfloat16_copy_kernel_cudaERNS_18TensorIterat"),
            "copy / cast");
  EXPECT_EQ(kernel_class("_ZN2at6native27unrolled_elementwise_kernelIZZZNS0_23direct_copy_kernel_cudaERNS_18TensorIteratorBase"),
            "copy / cast");
  EXPECT_EQ(kernel_class("pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4>>"), "attention");
  EXPECT_EQ(kernel_class("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float>"), "softmax / loss");
  EXPECT_EQ(kernel_class("_ZN2at6native24multi_tensor_apply_kernelINS1_18TensorListMetadataILi4EEENS1_21FusedAdamMathFunctor"),
            "optimizer");
  EXPECT_EQ(kernel_class("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), "communication");
  EXPECT_EQ(kernel_class("_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"), "communication");
  EXPECT_EQ(kernel_class("_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_14func_wrapper_t"), "reduction");
  EXPECT_EQ(kernel_class("_ZN2at6native36embedding_backward_feature_kernel"), "indexing / embedding");
  EXPECT_EQ(kernel_class("some_custom_kernel"), "other");
}

TEST(Analysis, KernelTimeByKindPerStep) {
  ActivityStream s;
  s.records = {range("step", 0, 1000, 0), range("step", 1000, 2000, 1),
               kernel(0, 300, 1, "nvjet_sm90_gemm"),      kernel(300, 400, 2, "vectorized_elementwise_kernel_add"),
               kernel(400, 450, 3, "direct_copy_kernel"), kernel(1000, 1300, 4, "nvjet_sm90_gemm"),
               kernel(1300, 1450, 5, "flash_fwd_kernel"), kernel(1450, 1550, 6, "vectorized_elementwise_kernel_mul")};
  const ProfileSummary p = analyze(s, {});
  ASSERT_EQ(p.kernel_classes.size(), 4u);
  EXPECT_EQ(p.kernel_classes[0].name, "matmul / conv");
  EXPECT_DOUBLE_EQ(p.kernel_classes[0].ms_per_step, 300e-6);  // 2 × 300 ns over 2 steps
  EXPECT_DOUBLE_EQ(p.kernel_classes[0].per_step, 1.0);
  EXPECT_DOUBLE_EQ(p.kernel_classes[0].share, 0.6);
  EXPECT_EQ(p.kernel_classes[1].name, "elementwise");
  EXPECT_DOUBLE_EQ(p.kernel_classes[1].share, 0.2);
  EXPECT_EQ(p.kernel_classes[2].name, "attention");
  EXPECT_EQ(p.kernel_classes[3].name, "copy / cast");
  EXPECT_DOUBLE_EQ(p.kernel_classes[2].share, 0.15);
  EXPECT_DOUBLE_EQ(p.kernel_classes[3].ms_per_step, 25e-6);
}

TEST(Analysis, OverlappingStreamsCountBusyOnce) {
  ActivityStream s;
  Activity k2 = kernel(150, 400, 2);
  k2.stream = 8;
  s.records = {range("step", 0, 1000, 0), kernel(100, 300, 1), k2};
  const ProfileSummary p = analyze(s, {});
  EXPECT_DOUBLE_EQ(p.busy_share, 0.300);  // union [100, 400]
}

TEST(Analysis, ItemIsOneSyncPerStepAndLogEveryRemovesIt) {
  auto stream = [](bool item_each_step) {
    ActivityStream s;
    for (int st = 0; st < 4; ++st) {
      const std::int64_t t = st * 1000000;
      s.records.push_back(range("step", t, t + 1000000, st));
      s.records.push_back(call("cudaLaunchKernel", t + 1000, t + 6000, 100 + st));
      s.records.push_back(kernel(t + 7000, t + 500000, 100 + st));
      if (item_each_step) {  // loss.item(): D2H into pageable memory, then a stream sync
        s.records.push_back(call("cudaMemcpyAsync", t + 600000, t + 601000, 200 + st));
        s.records.push_back(copy("DtoH", false, 4, t + 601500, t + 602000, 200 + st));
        s.records.push_back(call("cudaStreamSynchronize", t + 601100, t + 602500, 300 + st));
        // CUPTI's SYNCHRONIZATION record of the same call: not counted twice
        s.records.push_back(activity(ActKind::sync, "stream_synchronize", t + 601100, t + 602500, 300 + st, 0));
      }
    }
    return s;
  };
  const ProfileSummary p = analyze(stream(true), {});
  ASSERT_EQ(p.syncs.size(), 1u);
  EXPECT_EQ(p.syncs[0].what, "D2H copy to pageable memory + cudaStreamSynchronize (.item())");
  EXPECT_DOUBLE_EQ(p.syncs_per_step, 1.0);
  const ProfileSummary q = analyze(stream(false), {});
  EXPECT_DOUBLE_EQ(q.syncs_per_step, 0.0);

  // After the last step: the deferred loss read that flushes log_every > 1 and the device sync that
  // closes the traced window. They belong to the measurement, not to a training step (seen on an H100:
  // they made log_every=100 read 0.4 syncs per step over 5 traced steps).
  ActivityStream r = stream(false);
  const std::int64_t end = 4 * 1000000;
  r.records.push_back(call("cudaMemcpyAsync", end + 1000, end + 2000, 900));
  r.records.push_back(copy("DtoH", false, 4, end + 2500, end + 3000, 900));
  r.records.push_back(call("cudaStreamSynchronize", end + 2100, end + 3500, 901));
  r.records.push_back(activity(ActKind::sync, "stream_synchronize", end + 2100, end + 3500, 901, 0));
  r.records.push_back(call("cudaDeviceSynchronize", end + 4000, end + 9000, 902));
  r.records.push_back(activity(ActKind::sync, "context_synchronize", end + 4000, end + 9000, 903, 0));
  const ProfileSummary w = analyze(r, {});
  EXPECT_DOUBLE_EQ(w.syncs_per_step, 0.0);
  EXPECT_TRUE(w.syncs.empty());
}

TEST(Analysis, CopiesByDirectionAndHostMemoryKind) {
  ActivityStream s;
  s.records = {range("step", 0, 10000000, 0), copy("HtoD", true, 10000000, 0, 1000000, 1),
               copy("HtoD", false, 10000000, 1000000, 5000000, 2), copy("DtoD", false, 1000, 5000000, 5001000, 3)};
  const ProfileSummary p = analyze(s, {});
  ASSERT_EQ(p.copies.size(), 3u);
  std::map<std::string, CopyStat> by;
  for (const auto& c : p.copies) by[c.kind] = c;
  EXPECT_DOUBLE_EQ(by.at("HtoD pinned").gb_per_s, 10.0);
  EXPECT_DOUBLE_EQ(by.at("HtoD pageable").gb_per_s, 2.5);
  EXPECT_EQ(by.at("DtoD").bytes, 1000);
}

TEST(Analysis, LostRecordsMakeTheWindowInvalid) {
  ActivityStream s;
  s.records = {range("step", 0, 1000, 0), kernel(100, 300, 1)};
  s.dropped = 3;
  ProfileSummary p = analyze(s, {});
  EXPECT_FALSE(p.valid);
  EXPECT_NE(p.invalid_reason.find("3 dropped by CUPTI"), std::string::npos) << p.invalid_reason;
  s.dropped = 0;
  s.zero_timestamps = 2;
  p = analyze(s, {});
  EXPECT_FALSE(p.valid);
  EXPECT_NE(p.invalid_reason.find("2 GPU records with zero timestamps"), std::string::npos);
  EXPECT_FALSE(analyze(ActivityStream{}, {}).valid);
}

TEST(Analysis, PeakTableAndMfu) {
  std::string basis;
  EXPECT_DOUBLE_EQ(peak_flops("NVIDIA H100 80GB HBM3", "amp_bf16", basis), 989e12);
  EXPECT_EQ(basis, "H100 SXM dense bf16/fp16 peak");
  EXPECT_DOUBLE_EQ(peak_flops("NVIDIA H100 PCIe", "amp_fp16", basis), 756e12);
  EXPECT_DOUBLE_EQ(peak_flops("NVIDIA H200", "tf32", basis), 495e12);
  EXPECT_DOUBLE_EQ(peak_flops("NVIDIA A100-SXM4-80GB", "fp32", basis), 19.5e12);
  EXPECT_DOUBLE_EQ(peak_flops("NVIDIA L4", "amp_bf16", basis), 0);
  EXPECT_EQ(basis, "unknown device 'NVIDIA L4': no peak in the table");

  ActivityStream s = testing_stream::busy_steps(4, 10000000, 0.9);  // 10 ms steps, GPU busy 90%
  s.device_name = "NVIDIA H100 80GB HBM3";
  AnalysisOptions o;
  o.precision = "amp_bf16";
  o.flops_per_sample = 1e9;
  o.samples_per_step = 1000;  // 1e12 FLOP per 10 ms step = 100 TFLOP/s
  const ProfileSummary p = analyze(s, o);
  EXPECT_NEAR(p.mfu, 100.0 / 989.0, 1e-9);
  EXPECT_EQ(p.verdict, "memory-bound");  // busy but far from the peak
  o.flops_per_sample = 5e9;              // 500 TFLOP/s: 51% MFU
  EXPECT_EQ(analyze(s, o).verdict, "compute-bound");
}

TEST(Analysis, VerdictsNameTheKnobsThatAddressThem) {
  // Input-bound: the host's data phase is 40% of the step.
  ActivityStream in = testing_stream::busy_steps(3, 1000000, 0.5);
  for (int st = 0; st < 3; ++st) in.records.push_back(range("data", st * 1000000, st * 1000000 + 400000, st));
  ProfileSummary p = analyze(in, {});
  EXPECT_EQ(p.verdict, "input-bound");
  EXPECT_EQ(p.verdict_knobs, (std::vector<std::string>{"num_workers", "decode", "prefetch", "pin_memory"}));
  // Launch-bound: many tiny kernels, each shorter than its launch call; GPU mostly idle.
  ActivityStream tiny;
  tiny.records.push_back(range("step", 0, 1000000, 0));
  for (int i = 0; i < 100; ++i) {
    tiny.records.push_back(call("cudaLaunchKernel", i * 10000, i * 10000 + 8000, 1 + i));
    tiny.records.push_back(kernel(i * 10000 + 8500, i * 10000 + 9500, 1 + i));
  }
  p = analyze(tiny, {});
  EXPECT_DOUBLE_EQ(p.short_kernel_share, 1.0);
  EXPECT_EQ(p.verdict, "launch-bound");
  EXPECT_EQ(p.verdict_knobs.front(), "cuda_graphs");
}

Activity collective(const std::string& name, std::int64_t a, std::int64_t b, std::int64_t bytes) {
  Activity c = activity(ActKind::comm, name, a, b, 0, 99);
  c.bytes = bytes;
  return c;
}

TEST(Analysis, NcclKernelsAreTheCommunicationAndComputeKernelsHideThem) {
  // Two steps of 1000 ns. Step 0: compute 0-600, an NCCL allreduce 400-800 (200 ns under compute, 200
  // exposed); step 1: compute 1000-1500, NCCL 1100-1300 and 1250-1400 (union 300, all under compute).
  ActivityStream s;
  s.records = {range("step", 0, 1000, 0),
               range("step", 1000, 2000, 1),
               kernel(0, 600, 1),
               kernel(400, 800, 2, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
               kernel(1000, 1500, 3),
               kernel(1100, 1300, 4, "ncclKernel_AllReduce_RING_LL_Sum_float"),
               kernel(1250, 1400, 5, "_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE")};
  const ProfileSummary p = analyze(s, {});
  ASSERT_TRUE(p.comm.has_value());
  EXPECT_EQ(p.comm->source, "nccl kernels");
  EXPECT_DOUBLE_EQ(p.comm->calls_per_step, 1.5);
  EXPECT_DOUBLE_EQ(p.comm->ms_per_step, 350e-6);        // (400 + 300) / 2 ns
  EXPECT_DOUBLE_EQ(p.comm->hidden_share, 500.0 / 700);  // 200 + 300 under compute
  EXPECT_DOUBLE_EQ(p.comm->exposed_ms_per_step, 100e-6);
  EXPECT_DOUBLE_EQ(p.comm->mb_per_step, 0);
}

TEST(Analysis, HostCollectivesBeforeTheLastAllreduceLaunchAreHidden) {
  // One host-only step of 1000 ns: a broadcast 0-50 (buffers, before forward), allreduces of two buckets
  // 300-500 and 450-900 (the last launched at 450: backward produced gradients until then).
  ActivityStream s;
  s.records = {range("step", 0, 1000, 0),
               range("backward", 200, 900, 0),
               collective("gloo:broadcast", 0, 50, 400),
               collective("gloo:allreduce", 300, 500, 1000000),
               collective("gloo:allreduce", 450, 900, 3000000),
               collective("gloo:allreduce", 2000, 2100, 5)};  // outside the traced step: not counted
  ProfileSummary p = analyze(s, {});
  ASSERT_TRUE(p.comm.has_value());
  EXPECT_EQ(p.comm->source, "host collectives");
  EXPECT_DOUBLE_EQ(p.comm->calls_per_step, 3);
  EXPECT_DOUBLE_EQ(p.comm->ms_per_step, 650e-6);          // 50 + the union 300-900
  EXPECT_DOUBLE_EQ(p.comm->hidden_share, 200.0 / 650);    // 0-50 and 300-450
  EXPECT_DOUBLE_EQ(p.comm->exposed_ms_per_step, 450e-6);  // 450-900
  EXPECT_DOUBLE_EQ(p.comm->mb_per_step, 4.0004);
  EXPECT_EQ(p.verdict, "communication-bound");  // 45% of the step exposed
  EXPECT_EQ(p.verdict_knobs, (std::vector<std::string>{"bucket_mb", "comm_hook", "ranks"}));
  EXPECT_EQ(p.host_wait_share, 0);  // a host-only profile has no GPU idle split

  // Under 30% exposed: the phases decide as before, and a profile without collectives has no comm.
  s.records[4] = collective("gloo:allreduce", 450, 600, 3000000);
  p = analyze(s, {});
  EXPECT_DOUBLE_EQ(p.comm->exposed_ms_per_step, 150e-6);
  EXPECT_NE(p.verdict, "communication-bound");
  EXPECT_FALSE(analyze(testing_stream::busy_steps(2, 1000, 0.5), {}).comm.has_value());
}

TEST(Trace, CollectivesGetTheirOwnRowWithNameAndBytes) {
  ActivityStream s;
  s.pid = 42;
  s.records = {range("step", 0, 1000, 0), collective("gloo:allreduce", 300, 500, 4096)};
  const nlohmann::json t = chrome_trace(s, 1, 2, "gloo");
  EXPECT_EQ(t["distributedInfo"]["rank"], 1);
  EXPECT_EQ(t["distributedInfo"]["world_size"], 2);
  EXPECT_EQ(t["distributedInfo"]["backend"], "gloo");
  int found = 0;
  bool row_named = false;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "gloo:allreduce") {
      ++found;
      EXPECT_EQ(e["cat"], "cpu_op");
      EXPECT_EQ(e["pid"], 42);
      EXPECT_EQ(e["tid"], 99);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 0.2);
      EXPECT_EQ(e["args"]["Collective name"], "allreduce");
      EXPECT_EQ(e["args"]["bytes"], 4096);
    }
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == 99) row_named = e["args"]["name"] == "c10d collectives";
  }
  EXPECT_EQ(found, 1);
  EXPECT_TRUE(row_named);
}

TEST(Trace, TheFileTextRoundTripsAndShowsItsRankAsHtaSearchesForIt) {
  ActivityStream s = testing_stream::training_like(2);
  const nlohmann::json t = chrome_trace(s, 3, 4, "nccl");
  const std::string text = trace_text(t);
  EXPECT_EQ(nlohmann::json::parse(text), t);
  // HTA 0.5 takes the first match of "rank":\s+(\d+), line by line: it must be distributedInfo's.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex(R"("rank":\s+(\d+))")));
  EXPECT_EQ(m[1], "3");
  std::size_t event_lines = 0;  // one line per event
  for (std::size_t at = text.find("\n    {\""); at != std::string::npos; at = text.find("\n    {\"", at + 1)) ++event_lines;
  EXPECT_EQ(event_lines, t["traceEvents"].size());
}

TEST(Trace, KinetoShapedEventsFlowsAndMetadata) {
  const ActivityStream s = testing_stream::training_like(2);
  const nlohmann::json t = chrome_trace(s);
  EXPECT_EQ(t["distributedInfo"]["rank"], 0);
  EXPECT_EQ(t["schemaVersion"], 1);
  std::map<std::string, int> cats;
  std::map<std::uint64_t, int> flow_s, flow_f;
  bool step_name = false;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "X") {
      ++cats[e["cat"].get<std::string>()];
      EXPECT_GE(e["dur"].get<double>(), 0);
      if (e["cat"] == "kernel") {
        EXPECT_EQ(e["pid"], 0);  // device
        EXPECT_EQ(e["tid"], 7);  // stream
        EXPECT_TRUE(e["args"].contains("correlation"));
      }
      if (e["name"].get<std::string>().rfind("ProfilerStep#", 0) == 0) step_name = true;
    } else if (e["ph"] == "s") {
      ++flow_s[e["id"].get<std::uint64_t>()];
    } else if (e["ph"] == "f") {
      ++flow_f[e["id"].get<std::uint64_t>()];
      EXPECT_EQ(e["bp"], "e");
    }
  }
  EXPECT_TRUE(step_name);
  EXPECT_GT(cats["kernel"], 0);
  EXPECT_GT(cats["cuda_runtime"], 0);
  EXPECT_GT(cats["gpu_memcpy"], 0);
  EXPECT_GT(cats["user_annotation"], 0);
  EXPECT_FALSE(flow_s.empty());
  for (const auto& [id, n] : flow_f) EXPECT_EQ(flow_s.count(id), 1u) << "flow " << id << " has no start";
}

}  // namespace
}  // namespace autotune::prof

namespace autotune::prof {
namespace {

TEST(Cupti, DegradesWithAOneLineReasonWhereItCannotRun) {
  CuptiCollector c;
  std::string why;
  if (!c.start(why)) {  // here: no GPU driver (or no CUPTI, or another profiler): never a crash
    EXPECT_FALSE(why.empty());
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
    EXPECT_NE(why.find("host-only profile"), std::string::npos) << why;
    EXPECT_FALSE(c.active());
    EXPECT_TRUE(c.stop().records.empty());
    std::cout << "CUPTI here: " << why << "\n";
  } else {  // a GPU machine: an idle window collects without error
    const ActivityStream s = c.stop();
    EXPECT_EQ(s.dropped, 0);
  }
}

}  // namespace
}  // namespace autotune::prof
