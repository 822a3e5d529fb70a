#pragma once
// Hand-built activity streams shaped like a training step, for the analysis and trace tests and the
// HTA check (tests/profiler/write_sample_trace.cpp).
#include <utility>

#include "profiler/activity.h"

namespace autotune::prof::testing_stream {

/// A record with the fields every kind has. GPU work (kernel, memcpy, memset) runs on stream 7; other
/// kinds keep stream −1. `tid` is the host thread the record carries.
inline Activity activity(ActKind kind, std::string name, std::int64_t a, std::int64_t b, std::uint32_t corr, std::int64_t tid) {
  Activity x;
  x.kind = kind;
  x.name = std::move(name);
  x.start_ns = a;
  x.end_ns = b;
  x.correlation = corr;
  x.tid = tid;
  if (kind == ActKind::kernel || kind == ActKind::memcpy || kind == ActKind::memset) x.stream = 7;
  return x;
}

/// `steps` steps of `step_ns`, each with one launch + kernel covering `busy` of the step (stream 7).
inline ActivityStream busy_steps(int steps, std::int64_t step_ns, double busy) {
  ActivityStream s;
  for (int st = 0; st < steps; ++st) {
    const std::int64_t t = st * step_ns;
    Activity r = activity(ActKind::range, "step", t, t + step_ns, 0, 1);
    r.step = st;
    s.records.push_back(r);
    s.records.push_back(activity(ActKind::runtime, "cudaLaunchKernel", t, t + 1000, 1 + st, 1));
    s.records.push_back(activity(ActKind::kernel, "sm90_xmma_gemm_bf16", t + 2000,
                                 t + 2000 + static_cast<std::int64_t>(busy * static_cast<double>(step_ns)), 1 + st, 0));
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
    s.records.push_back(activity(kind, name, a, b, c, 4242));
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
    Activity& d2h =
        add(ActKind::memcpy, "Memcpy DtoH (Device -> Pageable)", t + 9 * ms + 610000 - 600000, t + 9 * ms + 15000, corr++);
    d2h.bytes = 4;
    d2h.copy_kind = "DtoH";
    add(ActKind::runtime, "cudaStreamSynchronize", t + 9 * ms + 11000, t + 9 * ms + 20000, corr++);
  }
  return s;
}

}  // namespace autotune::prof::testing_stream
