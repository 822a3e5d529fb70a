#include "profiler/analysis.h"

#include "profiler/spans.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <initializer_list>
#include <iterator>
#include <map>
#include <set>
#include <unordered_map>

namespace autotune::prof {

std::string to_string(ActKind k) {
  switch (k) {
    case ActKind::kernel:
      return "kernel";
    case ActKind::memcpy:
      return "memcpy";
    case ActKind::memset:
      return "memset";
    case ActKind::runtime:
      return "runtime";
    case ActKind::sync:
      return "sync";
    case ActKind::range:
      return "range";
    case ActKind::comm:
      return "comm";
  }
  return "kernel";
}

double peak_flops(const std::string& device, const std::string& precision, std::string& basis) {
  // Dense peaks (no sparsity), TFLOP/s: bf16/fp16 tensor, tf32 tensor, fp32 SIMT.
  struct Row {
    const char* match;
    const char* label;
    double half, tf32, fp32;
  };
  static const Row rows[] = {
      {"H100 PCIe", "H100 PCIe", 756, 378, 51},
      {"H100", "H100 SXM", 989, 495, 67},
      {"H200", "H200", 989, 495, 67},
      {"A100", "A100", 312, 156, 19.5},
  };
  for (const auto& r : rows) {
    if (device.find(r.match) == std::string::npos) continue;
    const bool half = precision == "amp_bf16" || precision == "amp_fp16";
    const double tf = half ? r.half : precision == "tf32" ? r.tf32 : r.fp32;
    basis = std::string(r.label) + " dense " + (half ? "bf16/fp16" : precision == "tf32" ? "tf32" : "fp32") + " peak";
    return tf * 1e12;
  }
  basis = device.empty() ? "no device name: no peak" : "unknown device '" + device + "': no peak in the table";
  return 0;
}

namespace {

bool is_sync_api(const std::string& n) {
  return n == "cudaStreamSynchronize" || n == "cudaDeviceSynchronize" || n == "cudaEventSynchronize" || n == "cudaMemcpy" ||
         n == "cudaMemcpy_v3020" || n == "cudaStreamSynchronize_v3020" || n == "cudaDeviceSynchronize_v3020";
}

std::string base_api(std::string n) {
  if (auto p = n.find("_v"); p != std::string::npos) n.resize(p);
  return n;
}

double pct(double x) { return 100 * x; }

std::string fmt1(const char* f, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c);
  return buf;
}

}  // namespace

namespace {

using Windows = std::vector<std::pair<std::int64_t, std::int64_t>>;
using ByCorrelation = std::unordered_map<std::uint32_t, const Activity*>;

/// The traced steps ("step" ranges), in order; without step ranges, the span of all records.
Windows step_windows(const ActivityStream& s) {
  Windows windows;
  for (const auto& a : s.records)
    if (a.kind == ActKind::range && a.name == "step") windows.emplace_back(a.start_ns, a.end_ns);
  std::sort(windows.begin(), windows.end());
  if (windows.empty()) {
    std::int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (const auto& a : s.records) lo = std::min(lo, a.start_ns), hi = std::max(hi, a.end_ns);
    if (lo < hi) windows.emplace_back(lo, hi);
  }
  return windows;
}

/// HTA's temporal breakdown, window by window: busy (any GPU op), and idle split into host-wait (the
/// op was issued only after the GPU went idle, or the window ends idle), kernel-wait (short gaps)
/// and other.
void idle_split(const Windows& windows, const std::vector<const Activity*>& ops, const ByCorrelation& launch, double window_ns,
                const AnalysisOptions& o, ProfileSummary& p) {
  double busy = 0, host_wait = 0, kernel_wait = 0, other = 0;
  for (const auto& [w0, w1] : windows) {
    std::int64_t cursor = w0;
    for (const Activity* op : ops) {
      const std::int64_t a = std::max(op->start_ns, w0), b = std::min(op->end_ns, w1);
      if (b <= a) continue;
      if (a > cursor) {
        const double gap = static_cast<double>(a - cursor);
        auto it = launch.find(op->correlation);
        if (it != launch.end() && it->second->start_ns >= cursor) host_wait += gap;  // issued only after the GPU went idle
        else if (gap < o.kernel_wait_ns) kernel_wait += gap;
        else other += gap;
        busy += static_cast<double>(b - a);
        cursor = b;
      } else if (b > cursor) {
        busy += static_cast<double>(b - cursor);
        cursor = b;
      }
    }
    if (w1 > cursor) host_wait += static_cast<double>(w1 - cursor);  // the GPU waits for the next step's launches
  }
  p.busy_share = busy / window_ns;
  p.host_wait_share = host_wait / window_ns;
  p.kernel_wait_share = kernel_wait / window_ns;
  p.other_idle_share = other / window_ns;
}

/// The phase ("forward", …) whose host range launched a GPU op. By external correlation: the id on the op
/// itself or on the runtime call that launched it (ranges carry the id they pushed). CUPTI keeps those ids
/// per thread, and the autograd engine runs a CUDA backward on its own device thread, whose launches carry
/// none: those take the phase whose host range (on the training thread, which waits meanwhile) holds the
/// launch call's start.
class PhaseOf {
 public:
  PhaseOf(const ActivityStream& s, const ByCorrelation& launch) : launch_(launch) {
    for (const auto& a : s.records)
      if (a.kind == ActKind::range && a.name != "step") {
        if (a.external_id) name_[a.external_id] = a.name;
        spans_.push_back(&a);
      }
    std::sort(spans_.begin(), spans_.end(), [](auto* x, auto* y) { return x->start_ns < y->start_ns; });
  }
  /// nullptr when the op carries no known phase.
  const std::string* operator()(const Activity& op) const {
    auto call = launch_.find(op.correlation);
    std::uint64_t id = op.external_id;
    if (!id && call != launch_.end()) id = call->second->external_id;
    if (auto it = id ? name_.find(id) : name_.end(); it != name_.end()) return &it->second;
    if (call == launch_.end()) return nullptr;
    const std::int64_t t = call->second->start_ns;
    auto after = std::upper_bound(spans_.begin(), spans_.end(), t, [](std::int64_t v, auto* r) { return v < r->start_ns; });
    if (after == spans_.begin()) return nullptr;
    const Activity* r = *std::prev(after);
    return t < r->end_ns ? &r->name : nullptr;
  }

 private:
  const ByCorrelation& launch_;
  std::unordered_map<std::uint64_t, std::string> name_;
  std::vector<const Activity*> spans_;  // the phase ranges by start
};

using Geometry = std::pair<std::array<std::int32_t, 3>, std::array<std::int32_t, 3>>;  // grid, block

/// Kernels per step, the median launch delay, kernels shorter than their launch, the top 10 by time
/// (each with its time per call, launch geometry and the phases that launched it), and every kernel's
/// time by kind.
void kernel_stats(const std::vector<const Activity*>& ops, const ByCorrelation& launch, const PhaseOf& phase_of,
                  ProfileSummary& p) {
  std::vector<double> delays;
  std::int64_t kernels = 0, with_launch = 0, short_k = 0;
  double kernel_ns = 0;
  std::map<std::string, KernelStat> by_name;
  std::map<std::string, std::map<Geometry, std::int64_t>> geometries;
  for (const Activity* op : ops) {
    if (op->kind != ActKind::kernel) continue;
    ++kernels;
    const double ms = op->duration_ns() / 1e6;
    kernel_ns += static_cast<double>(op->duration_ns());
    auto& k = by_name[op->name];
    k.name = op->name;
    ++k.count;
    k.total_ms += ms;
    if (op->grid[0] > 0) {
      ++geometries[op->name][{op->grid, op->block}];
      double threads = 1;
      for (int d = 0; d < 3; ++d) threads *= static_cast<double>(op->grid[d]) * op->block[d];
      k.threads_per_call += threads;  // a sum until the mean below
    }
    if (const std::string* ph = phase_of(*op)) k.phases[*ph] += ms;
    if (auto it = launch.find(op->correlation); it != launch.end()) {
      ++with_launch;
      delays.push_back((op->start_ns - it->second->end_ns) / 1e3);
      if (op->duration_ns() < it->second->duration_ns()) ++short_k;
    }
  }
  p.kernels_per_step = static_cast<double>(kernels) / p.steps;
  if (!delays.empty()) {
    std::sort(delays.begin(), delays.end());
    p.launch_delay_us = delays[delays.size() / 2];
  }
  p.short_kernel_share = with_launch ? static_cast<double>(short_k) / with_launch : 0;
  for (auto& [n, k] : by_name) {
    k.share = kernel_ns > 0 ? k.total_ms * 1e6 / kernel_ns : 0;
    k.mean_us = k.total_ms * 1e3 / static_cast<double>(k.count);
    if (auto g = geometries.find(n); g != geometries.end()) {
      std::int64_t calls = 0, most = 0;
      for (const auto& [geom, c] : g->second) {
        calls += c;
        if (c > most) {
          most = c;
          k.grid = geom.first;
          k.block = geom.second;
        }
      }
      k.geometries = static_cast<int>(g->second.size());
      k.threads_per_call /= static_cast<double>(calls);
    }
    for (auto& [ph, ms] : k.phases) ms /= k.total_ms;
    p.top_kernels.push_back(k);
  }
  std::map<std::string, KernelClass> by_class;
  for (const auto& k : p.top_kernels) {
    auto& c = by_class[kernel_class(k.name)];
    c.per_step += static_cast<double>(k.count) / p.steps;
    c.ms_per_step += k.total_ms / p.steps;
    c.share += k.share;
  }
  for (auto& [n, c] : by_class) {
    c.name = n;
    p.kernel_classes.push_back(c);
  }
  std::sort(p.kernel_classes.begin(), p.kernel_classes.end(),
            [](const KernelClass& a, const KernelClass& b) { return a.ms_per_step > b.ms_per_step; });
  std::sort(p.top_kernels.begin(), p.top_kernels.end(),
            [](const KernelStat& a, const KernelStat& b) { return a.total_ms > b.total_ms; });
  if (p.top_kernels.size() > 10) p.top_kernels.resize(10);
}

bool inside(const Windows& windows, std::int64_t t) {
  return std::any_of(windows.begin(), windows.end(), [t](const auto& w) { return t >= w.first && t < w.second; });
}

/// Synchronisations, by the host call that blocked. A D2H copy into pageable memory is itself a sync;
/// followed by a stream sync on the same thread it is one event: that is how .item() looks. Only calls
/// made inside a step count: the profiler's own synchronisation that closes the traced window, and the
/// deferred loss read that ends it (with log_every > 1 it happens once per log_every steps in training,
/// not once per traced window), are the measurement's, not the training step's.
void sync_stats(const ActivityStream& s, const Windows& windows, const std::vector<const Activity*>& ops, ProfileSummary& p) {
  ByCorrelation copy_of;  // correlation → memcpy record
  for (const Activity* op : ops)
    if (op->kind == ActKind::memcpy && op->correlation) copy_of[op->correlation] = op;
  std::map<std::int64_t, std::vector<const Activity*>> by_thread;
  for (const auto& a : s.records)
    if (a.kind == ActKind::runtime) by_thread[a.tid].push_back(&a);
  std::map<std::string, std::int64_t> sync_count;
  std::set<std::uint32_t> counted;
  for (auto& [tid, calls] : by_thread) {
    std::sort(calls.begin(), calls.end(), [](auto* x, auto* y) { return x->start_ns < y->start_ns; });
    for (size_t i = 0; i < calls.size(); ++i) {
      const Activity* c = calls[i];
      if (!inside(windows, c->start_ns)) {
        counted.insert(c->correlation);  // nor its SYNCHRONIZATION record below
        continue;
      }
      const std::string api = base_api(c->name);
      auto cp = copy_of.find(c->correlation);
      const bool pageable_d2h =
          api.rfind("cudaMemcpy", 0) == 0 && cp != copy_of.end() && cp->second->copy_kind == "DtoH" && !cp->second->host_pinned;
      if (pageable_d2h) {
        counted.insert(c->correlation);
        if (i + 1 < calls.size() && is_sync_api(calls[i + 1]->name)) {
          ++sync_count["D2H copy to pageable memory + " + base_api(calls[i + 1]->name) + " (.item())"];
          counted.insert(calls[i + 1]->correlation);
          ++i;
        } else {
          ++sync_count["D2H copy to pageable memory (" + api + ")"];
        }
      } else if (is_sync_api(c->name)) {
        ++sync_count[api];
        counted.insert(c->correlation);
      }
    }
  }
  for (const auto& a : s.records)  // SYNCHRONIZATION records whose API call was not seen
    if (a.kind == ActKind::sync && !counted.count(a.correlation) && inside(windows, a.start_ns))
      ++sync_count[a.name.empty() ? "synchronization" : a.name];
  std::int64_t nsync = 0;
  for (const auto& [what, n] : sync_count) {
    p.syncs.push_back({what, n, static_cast<double>(n) / p.steps});
    nsync += n;
  }
  std::sort(p.syncs.begin(), p.syncs.end(), [](const SyncStat& a, const SyncStat& b) { return a.count > b.count; });
  p.syncs_per_step = static_cast<double>(nsync) / p.steps;
}

/// Copies by direction and host memory kind, with their bandwidth.
void copy_stats(const std::vector<const Activity*>& ops, ProfileSummary& p) {
  std::map<std::string, CopyStat> copies;
  for (const Activity* op : ops) {
    if (op->kind != ActKind::memcpy) continue;
    const bool host_side = op->copy_kind == "HtoD" || op->copy_kind == "DtoH";
    const std::string kind = op->copy_kind + (host_side ? (op->host_pinned ? " pinned" : " pageable") : "");
    auto& c = copies[kind];
    c.kind = kind;
    ++c.count;
    c.bytes += op->bytes;
    c.ms += op->duration_ns() / 1e6;
  }
  for (auto& [k, c] : copies) {
    c.gb_per_s = c.ms > 0 ? static_cast<double>(c.bytes) / (c.ms / 1e3) / 1e9 : 0;
    p.copies.push_back(c);
  }
}

/// Host time per step of each phase, and the GPU work each phase launched (external correlation ids).
void phase_times(const ActivityStream& s, const std::vector<const Activity*>& ops, const PhaseOf& phase_of,
                 ProfileSummary& p) {
  for (const auto& a : s.records)
    if (a.kind == ActKind::range && a.name != "step") p.phase_ms[a.name] += a.duration_ns() / 1e6 / p.steps;
  for (const Activity* op : ops)
    if (const std::string* ph = phase_of(*op)) p.gpu_phase_ms[*ph] += op->duration_ns() / 1e6 / p.steps;
}

using Spans = prof::Spans<std::int64_t>;

/// An NCCL kernel, by the same rule kernel_class() uses: CUPTI reports kernel names mangled
/// (`_Z39ncclDevKernel_AllReduce_…`), so a prefix test on "nccl" would miss them.
bool is_nccl_kernel(const Activity& a) { return a.kind == ActKind::kernel && kernel_class(a.name) == "communication"; }

bool is_allreduce(const std::string& name) {
  const std::string tail = ":allreduce";
  return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
}

/// Gradient communication in the traced steps. With NCCL kernels on the timeline (a GPU), those are the
/// communication and the hidden part is what other kernels overlap; otherwise the host collectives the
/// worker recorded (Gloo on the CPU), whose hidden part is what ran before the step's last allreduce was
/// launched — backward was still producing gradients until then (the rule of dist::summarize_comm in
/// workloads/engine/dist/ddp.cpp, which the result's per-step communication figures use).
void comm_stats(const ActivityStream& s, const Windows& windows, const std::vector<const Activity*>& ops, ProfileSummary& p) {
  const bool nccl = std::any_of(ops.begin(), ops.end(), [](const Activity* a) { return is_nccl_kernel(*a); });
  const bool host = std::any_of(s.records.begin(), s.records.end(), [](const Activity& a) { return a.kind == ActKind::comm; });
  if (!nccl && !host) return;
  CommProfile c;
  c.source = nccl ? "nccl kernels" : "host collectives";
  std::int64_t total = 0, hidden = 0, calls = 0, bytes = 0;
  for (const auto& window : windows) {
    const std::int64_t w0 = window.first, w1 = window.second;  // named: a lambda below uses them (C++17 cannot capture bindings)
    Spans comm, compute;
    std::int64_t cutoff = w0;
    auto clip = [&](const Activity& a, Spans& into) {
      const std::int64_t x = std::max(a.start_ns, w0), y = std::min(a.end_ns, w1);
      if (y > x) into.emplace_back(x, y);
    };
    if (nccl) {
      for (const Activity* op : ops) {
        if (op->kind != ActKind::kernel) continue;
        const bool is_comm = is_nccl_kernel(*op);
        clip(*op, is_comm ? comm : compute);
        if (is_comm && op->start_ns >= w0 && op->start_ns < w1) ++calls;
      }
      comm = merged(comm);
      hidden += overlap(comm, merged(compute));
    } else {
      for (const auto& a : s.records) {
        if (a.kind != ActKind::comm || a.start_ns < w0 || a.start_ns >= w1) continue;
        ++calls;
        bytes += a.bytes;
        if (a.end_ns > a.start_ns) clip(a, comm);
        if (is_allreduce(a.name)) cutoff = std::max(cutoff, a.start_ns);
      }
      comm = merged(comm);
      hidden += overlap(comm, {{w0, cutoff}});
    }
    total += length(comm);
  }
  c.calls_per_step = static_cast<double>(calls) / p.steps;
  c.ms_per_step = static_cast<double>(total) / 1e6 / p.steps;
  c.hidden_share = total > 0 ? static_cast<double>(hidden) / static_cast<double>(total) : 0;
  c.exposed_ms_per_step = static_cast<double>(total - hidden) / 1e6 / p.steps;
  c.mb_per_step = static_cast<double>(bytes) / 1e6 / p.steps;
  p.comm = c;
}

/// Communication that compute did not hide, when it is 30% of the step or more.
bool comm_verdict(ProfileSummary& p) {
  if (!p.comm || p.step_ms <= 0 || p.comm->exposed_ms_per_step / p.step_ms < 0.30) return false;
  p.verdict = "communication-bound";
  p.verdict_detail = "gradient communication (" + p.comm->source + ") " +
                     fmt1("takes %.0f%% of each step unhidden by compute (%.2f ms per step, %.0f%% of it hidden)",
                          pct(p.comm->exposed_ms_per_step / p.step_ms), p.comm->ms_per_step, pct(p.comm->hidden_share));
  p.verdict_knobs = {"bucket_mb", "comm_hook", "ranks"};
  return true;
}

/// Host-only profile (no GPU records): the verdict from the phases alone.
void host_only_verdict(ProfileSummary& p) {
  auto share = [&](const char* n) { return p.phase_ms.count(n) && p.step_ms > 0 ? p.phase_ms.at(n) / p.step_ms : 0.0; };
  const double data = share("data") + share("h2d"), opt = share("optimizer"), fb = share("forward") + share("backward");
  p.verdict_detail =
      fmt1("host only: data %.0f%%, forward+backward %.0f%%, optimizer %.0f%% of the step", pct(data), pct(fb), pct(opt));
  if (data >= 0.30) p.verdict = "input-bound", p.verdict_knobs = {"num_workers", "decode", "prefetch"};
  else if (comm_verdict(p)) {
  } else if (opt >= 0.25) p.verdict = "optimizer-bound", p.verdict_knobs = {"optimizer_impl", "grad_accum", "zero_grad"};
  else if (fb >= 0.60) p.verdict = "compute-bound", p.verdict_knobs = {"precision", "memory_format", "batch_size", "threads"};
  else p.verdict = "mixed";
  p.busy_share = p.host_wait_share = p.kernel_wait_share = p.other_idle_share = 0;
}

/// The bottleneck of a GPU profile, first match: input, communication, host syncs, launches, memory, compute.
void gpu_verdict(ProfileSummary& p) {
  double data_ms = 0;
  for (const char* n : {"data", "h2d"})
    if (p.phase_ms.count(n)) data_ms += p.phase_ms.at(n);
  const double data_share = p.step_ms > 0 ? data_ms / p.step_ms : 0;
  if (data_share >= 0.30) {
    p.verdict = "input-bound";
    p.verdict_detail = fmt1("the host spends %.0f%% of each step waiting for and copying data; the GPU is busy %.0f%%",
                            pct(data_share), pct(p.busy_share));
    p.verdict_knobs = {"num_workers", "decode", "prefetch", "pin_memory"};
  } else if (comm_verdict(p)) {
  } else if (p.syncs_per_step >= 1 && p.host_wait_share >= 0.20) {
    p.verdict = "sync-bound";
    p.verdict_detail = fmt1("%.1f host synchronisations per step", p.syncs_per_step) + " (" + p.syncs.front().what +
                       fmt1(") and the GPU idles %.0f%% of the step waiting for the host", pct(p.host_wait_share));
    p.verdict_knobs = {"log_every", "cuda_graphs"};
  } else if (p.busy_share < 0.70 && p.short_kernel_share >= 0.50) {
    p.verdict = "launch-bound";
    p.verdict_detail = fmt1("GPU busy %.0f%%; %.0f%% of kernels ran shorter than their launch call took", pct(p.busy_share),
                            pct(p.short_kernel_share));
    p.verdict_knobs = {"cuda_graphs", "batch_size", "optimizer_impl"};
  } else if (p.busy_share >= 0.85 && p.mfu >= 0 && p.mfu < 0.25) {
    p.verdict = "memory-bound";
    p.verdict_detail = fmt1("GPU busy %.0f%% but MFU only %.0f%% of the %.0f TFLOP/s peak: the kernels wait on memory",
                            pct(p.busy_share), pct(p.mfu), p.peak_tflops);
    p.verdict_knobs = {"precision", "memory_format", "batch_size"};
  } else if (p.busy_share >= 0.85) {
    p.verdict = "compute-bound";
    p.verdict_detail = fmt1("GPU busy %.0f%% of the step", pct(p.busy_share)) +
                       (p.mfu >= 0 ? fmt1(", MFU %.0f%%", pct(p.mfu)) : std::string(", MFU unknown (") + p.peak_basis + ")");
    p.verdict_knobs = {"precision", "memory_format", "cudnn_benchmark"};
  } else {
    p.verdict = "mixed";
    p.verdict_detail = fmt1("GPU busy %.0f%%, idle waiting for the host %.0f%%, other idle %.0f%%", pct(p.busy_share),
                            pct(p.host_wait_share), pct(p.other_idle_share + p.kernel_wait_share));
  }
}

}  // namespace

std::string kernel_class(const std::string& kernel_name) {
  std::string n(kernel_name.size(), ' ');
  std::transform(kernel_name.begin(), kernel_name.end(), n.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  auto any = [&n](std::initializer_list<const char*> parts) {
    return std::any_of(parts.begin(), parts.end(), [&n](const char* x) { return n.find(x) != std::string::npos; });
  };
  if (any({"nccl"})) return "communication";
  if (any({"flash", "fmha", "attention", "sdpa"})) return "attention";
  if (any({"gemm", "nvjet", "cutlass", "xmma", "wgmma", "cublas", "convolution", "convolve", "conv2d", "fprop", "dgrad",
           "wgrad"}))
    return "matmul / conv";
  if (any({"adam", "sgd", "multi_tensor_apply"})) return "optimizer";
  if (any({"batch_norm", "batchnorm", "layer_norm", "layernorm", "group_norm", "groupnorm", "rms_norm", "rmsnorm"}))
    return "normalization";
  if (any({"softmax", "nll_loss", "cross_entropy"})) return "softmax / loss";
  if (any({"copy", "catarray"})) return "copy / cast";
  if (any({"reduce"})) return "reduction";
  if (any({"embedding", "index", "gather", "scatter"})) return "indexing / embedding";
  if (any({"elementwise"})) return "elementwise";
  return "other";
}

ProfileSummary analyze(const ActivityStream& s, const AnalysisOptions& o) {
  ProfileSummary p;
  if (s.dropped > 0 || s.zero_timestamps > 0) {
    p.invalid_reason = fmt1(
        "records were lost (%.0f dropped by CUPTI, %.0f GPU records with zero timestamps): the window is "
        "not analysed; trace fewer steps or enlarge the activity buffers",
        static_cast<double>(s.dropped), static_cast<double>(s.zero_timestamps));
    return p;
  }
  const Windows windows = step_windows(s);
  if (windows.empty()) {
    p.invalid_reason = "no activity records in the traced window";
    return p;
  }
  p.valid = true;
  p.steps = static_cast<int>(windows.size());
  double window_ns = 0;
  for (const auto& [a, b] : windows) window_ns += static_cast<double>(b - a);
  p.step_ms = window_ns / p.steps / 1e6;

  ByCorrelation launch;  // correlation → runtime call
  for (const auto& a : s.records)
    if (a.kind == ActKind::runtime && a.correlation) launch[a.correlation] = &a;
  std::vector<const Activity*> ops;
  for (const auto& a : s.records)
    if (is_gpu_op(a.kind)) ops.push_back(&a);
  std::sort(ops.begin(), ops.end(), [](auto* x, auto* y) { return x->start_ns < y->start_ns; });

  const PhaseOf phase_of(s, launch);
  idle_split(windows, ops, launch, window_ns, o, p);
  kernel_stats(ops, launch, phase_of, p);
  sync_stats(s, windows, ops, p);
  copy_stats(ops, p);
  phase_times(s, ops, phase_of, p);
  comm_stats(s, windows, ops, p);
  const double peak = peak_flops(s.device_name, o.precision, p.peak_basis);
  p.peak_tflops = peak / 1e12;
  if (peak > 0 && o.flops_per_sample > 0 && o.samples_per_step > 0 && p.step_ms > 0)
    p.mfu = o.flops_per_sample * static_cast<double>(o.samples_per_step) / (p.step_ms / 1e3) / peak;
  p.gpu = !ops.empty();
  if (p.gpu) gpu_verdict(p);
  else host_only_verdict(p);
  return p;
}

}  // namespace autotune::prof
