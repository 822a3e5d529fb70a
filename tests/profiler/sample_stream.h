#pragma once
// Hand-built activity streams shaped like a training step, for the analysis and trace tests and the
// HTA check (tests/profiler/write_sample_trace.cpp).
#include "profiler/activity.h"

namespace autotune::prof::testing_stream {

/// `steps` steps of `step_ns`, each with one launch + kernel covering `busy` of the step (stream 7).
inline ActivityStream busy_steps(int steps, std::int64_t step_ns, double busy) {
  ActivityStream s;
  for (int st = 0; st < steps; ++st) {
    const std::int64_t t = st * step_ns;
    Activity r;
    r.kind = ActKind::range;
    r.name = "step";
    r.step = st;
    r.start_ns = t;
    r.end_ns = t + step_ns;
    r.tid = 1;
    s.records.push_back(r);
    Activity c;
    c.kind = ActKind::runtime;
    c.name = "cudaLaunchKernel";
    c.tid = 1;
    c.start_ns = t;
    c.end_ns = t + 1000;
    c.correlation = 1 + st;
    s.records.push_back(c);
    Activity k;
    k.kind = ActKind::kernel;
    k.name = "sm90_xmma_gemm_bf16";
    k.stream = 7;
    k.correlation = 1 + st;
    k.start_ns = t + 2000;
    k.end_ns = t + 2000 + static_cast<std::int64_t>(busy * static_cast<double>(step_ns));
    s.records.push_back(k);
  }
  return s;
}

/// `steps` training-like steps of 10 ms: data range, an H2D copy of 12 MB (pinned), forward/backward
/// kernels, an optimizer kernel, and a loss.item() (pageable D2H + stream sync) per step.
inline ActivityStream training_like(int steps) {
  ActivityStream s;
  s.device_name = "NVIDIA H100 80GB HBM3";
  s.pid = 4242;
  std::uint32_t corr = 1;
  auto add = [&](ActKind kind, const std::string& name, std::int64_t a, std::int64_t b, std::uint32_t c) -> Activity& {
    Activity x;
    x.kind = kind;
    x.name = name;
    x.start_ns = a;
    x.end_ns = b;
    x.correlation = c;
    x.tid = 4242;
    if (kind != ActKind::runtime && kind != ActKind::range) x.stream = 7;
    s.records.push_back(x);
    return s.records.back();
  };
  const std::int64_t ms = 1000000;
  for (int st = 0; st < steps; ++st) {
    const std::int64_t t = 1000000000LL + st * 10 * ms;
    add(ActKind::range, "step", t, t + 10 * ms, 0).step = st;
    add(ActKind::range, "data", t, t + 1 * ms, 0).step = st;
    add(ActKind::range, "h2d", t + 1 * ms, t + 1 * ms + 200000, 0).step = st;
    add(ActKind::runtime, "cudaMemcpyAsync", t + 1 * ms, t + 1 * ms + 20000, corr);
    Activity& h2d = add(ActKind::memcpy, "Memcpy HtoD (Pinned -> Device)", t + 1 * ms + 30000, t + 1 * ms + 530000, corr++);
    h2d.bytes = 12 << 20;
    h2d.copy_kind = "HtoD";
    h2d.host_pinned = true;
    add(ActKind::range, "forward", t + 1200000, t + 4 * ms, 0).step = st;
    add(ActKind::range, "backward", t + 4 * ms, t + 8 * ms, 0).step = st;
    for (int i = 0; i < 20; ++i) {  // forward + backward kernels, 300 µs each, queued ahead
      const std::int64_t l = t + 1200000 + i * 100000;
      add(ActKind::runtime, "cudaLaunchKernel", l, l + 5000, corr);
      add(ActKind::kernel, i % 2 ? "sm90_xmma_gemm_bf16bf16_bf16f32" : "vectorized_elementwise_kernel", t + 1600000 + i * 310000,
          t + 1600000 + i * 310000 + 300000, corr++);
    }
    add(ActKind::range, "optimizer", t + 8 * ms, t + 9 * ms, 0).step = st;
    add(ActKind::runtime, "cudaLaunchKernel", t + 8 * ms, t + 8 * ms + 5000, corr);
    add(ActKind::kernel, "multi_tensor_apply_kernel<FusedAdamW>", t + 8 * ms + 10000, t + 8 * ms + 600000, corr++);
    add(ActKind::runtime, "cudaMemcpyAsync", t + 9 * ms, t + 9 * ms + 10000, corr);
    Activity& d2h = add(ActKind::memcpy, "Memcpy DtoH (Device -> Pageable)", t + 9 * ms + 610000 - 600000, t + 9 * ms + 15000, corr++);
    d2h.bytes = 4;
    d2h.copy_kind = "DtoH";
    add(ActKind::runtime, "cudaStreamSynchronize", t + 9 * ms + 11000, t + 9 * ms + 20000, corr++);
  }
  return s;
}

}  // namespace autotune::prof::testing_stream
