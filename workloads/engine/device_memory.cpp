#include "workloads/engine/device_memory.h"

#include <ATen/Context.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <unordered_map>

#include "knobs/error.h"

namespace autotune {

namespace {
// The one installed counter and each live block's size. Blocks are "simple" data pointers (the context
// is the data, as LibTorch's raw_allocate and oneDNN's tensors require), so the size is kept beside them.
CountingCpuAllocator* g_installed = nullptr;
std::mutex g_sizes_mutex;
std::unordered_map<void*, std::size_t>& sizes() {
  static auto* m = new std::unordered_map<void*, std::size_t>();  // never destroyed: freed tensors may outlive main
  return *m;
}
}  // namespace

c10::DataPtr CountingCpuAllocator::allocate(std::size_t n) {
  const auto bytes = static_cast<std::int64_t>(n);
  const std::int64_t now = current_.fetch_add(bytes) + bytes;
  if (cap_ > 0 && now > cap_) {
    current_.fetch_sub(bytes);
    ++ooms_;
    failed_.store(bytes);
    TORCH_CHECK_WITH(OutOfMemoryError, false,
                     fmt::format("CPU out of memory (--memory-cap {}, a counting allocator emulating a device of that size): "
                                 "tried to allocate {} with {} in use",
                                 format_bytes(cap_), format_bytes(bytes), format_bytes(now - bytes)));
  }
  std::int64_t p = peak_.load();
  while (now > p && !peak_.compare_exchange_weak(p, now)) {
  }
  void* data = c10::alloc_cpu(n);
  {
    std::lock_guard<std::mutex> lock(g_sizes_mutex);
    sizes()[data] = n;
  }
  return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
}

void CountingCpuAllocator::release(void* ctx) {
  if (!ctx) return;
  std::size_t n = 0;
  {
    std::lock_guard<std::mutex> lock(g_sizes_mutex);
    auto it = sizes().find(ctx);
    if (it != sizes().end()) {
      n = it->second;
      sizes().erase(it);
    }
  }
  if (g_installed) g_installed->current_.fetch_sub(static_cast<std::int64_t>(n));
  c10::free_cpu(ctx);
}

CountingCpuAllocator& CountingCpuAllocator::install(std::int64_t cap_bytes) {
  static std::mutex m;
  std::lock_guard<std::mutex> lock(m);
  if (!g_installed) {
    g_installed = new CountingCpuAllocator(cap_bytes);  // never destroyed: tensors may outlive main's locals
    c10::SetCPUAllocator(g_installed, /*priority=*/100);
  }
  g_installed->cap_ = cap_bytes;
  return *g_installed;
}

MemoryMeter::MemoryMeter(torch::Device dev, std::int64_t cap_bytes)
    // "cuda" without an index is the current device; the allocator's calls need its number (-1 is "Invalid device argument").
    : dev_(dev.is_cuda() && !dev.has_index() ? torch::Device(torch::kCUDA, c10::cuda::current_device()) : dev) {
  dev = dev_;
  if (dev.is_cpu()) {
    cpu_ = &CountingCpuAllocator::install(cap_bytes);
    rec_.allocator = "cpu-counting";
    rec_.round_bytes = 1;
    rec_.context_bytes = cpu_->current();
    rec_.capacity_bytes = cap_bytes;
    if (cap_bytes > 0 && cap_bytes <= rec_.context_bytes)
      throw UsageError(fmt::format("--memory-cap {} is not above the {} this worker holds before building the model; "
                                   "allowed: a size above {}",
                                   format_bytes(cap_bytes), format_bytes(rec_.context_bytes), format_bytes(rec_.context_bytes)));
  } else {
    namespace cca = c10::cuda::CUDACachingAllocator;
    // The caching allocator has no per-device state until CUDA's lazy initialisation: before the first CUDA tensor,
    // its stats calls fail with "Invalid device argument 0: did you call init?" (the H200 lease of 2026-11-27).
    at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
    const auto idx = dev.index();
    const auto [free, total] = cca::get()->getMemoryInfo(idx);
    const auto st = cca::getDeviceStats(idx);
    rec_.allocator = "cuda-caching";
    rec_.round_bytes = 512;
    // In use on the device but not by this allocator: the CUDA context, NCCL, other processes.
    rec_.context_bytes = static_cast<std::int64_t>(total - free) - st.reserved_bytes[0].current;
    rec_.capacity_bytes = static_cast<std::int64_t>(total) - rec_.context_bytes;
    if (cap_bytes > 0) {
      if (cap_bytes <= rec_.context_bytes)
        throw UsageError(fmt::format("--memory-cap {} is below the {} in use outside the allocator (CUDA context, NCCL); "
                                     "allowed: a size above {}",
                                     format_bytes(cap_bytes), format_bytes(rec_.context_bytes), format_bytes(rec_.context_bytes)));
      // The fraction bounds what the allocator may reserve; the context sits outside it.
      cca::setMemoryFraction(std::min(1.0, static_cast<double>(cap_bytes - rec_.context_bytes) / static_cast<double>(total)), idx);
      rec_.capacity_bytes = cap_bytes - rec_.context_bytes;
    }
    cca::resetPeakStats(idx);
  }
  reset_peak();
}

std::int64_t MemoryMeter::current() const {
  if (cpu_) return cpu_->current();
  return c10::cuda::CUDACachingAllocator::getDeviceStats(dev_.index()).allocated_bytes[0].current;
}

std::int64_t MemoryMeter::peak() const {
  if (cpu_) return cpu_->peak();
  return c10::cuda::CUDACachingAllocator::getDeviceStats(dev_.index()).allocated_bytes[0].peak;
}

void MemoryMeter::reset_peak() {
  if (cpu_) {
    cpu_->reset_peak();
    return;
  }
  // The whole-trial reserved peak survives the per-phase resets: keep it before resetting.
  namespace cca = c10::cuda::CUDACachingAllocator;
  const auto st = cca::getDeviceStats(dev_.index());
  rec_.peak_reserved = std::max<std::int64_t>(rec_.peak_reserved, st.reserved_bytes[0].peak);
  rec_.alloc_retries = st.num_alloc_retries;
  rec_.ooms = st.num_ooms;
  cca::resetPeakStats(dev_.index());
}

void MemoryMeter::close_segment() {
  const std::int64_t pk = peak();
  whole_peak_ = std::max(whole_peak_, pk);
  if (seg_ == Seg::forward) rec_.forward_peak = std::max(rec_.forward_peak, pk);
  if (seg_ == Seg::backward) rec_.backward_peak = std::max(rec_.backward_peak, pk);
  if (seg_ == Seg::optimizer) {
    rec_.optimizer_peak = std::max(rec_.optimizer_peak, pk);
    ++rec_.steps;
  }
  rec_.forward_backward_peak = std::max(rec_.forward_peak, rec_.backward_peak);
  reset_peak();
}

void MemoryMeter::enter(const char* phase) {
  const std::string p = phase;
  const Seg next = p == "data" || p == "forward" ? Seg::forward : p == "backward" ? Seg::backward : p == "optimizer" ? Seg::optimizer : seg_;
  if (next == seg_) return;
  close_segment();
  seg_ = next;
  if (next == Seg::optimizer && rec_.steps >= 1 && !counted_ && count_) count_();
}

void MemoryMeter::close() {
  if (seg_ == Seg::none) return;
  close_segment();
  seg_ = Seg::none;
}

void MemoryMeter::count_states(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& optimizer_state,
                               std::int64_t bucket_bytes) {
  std::set<const void*> seen;
  const auto bytes_of = [&](const torch::Tensor& t) -> std::int64_t {
    if (!t.defined() || !t.has_storage()) return 0;
    const void* key = t.storage().data();
    if (!seen.insert(key).second) return 0;
    return static_cast<std::int64_t>(t.storage().nbytes());
  };
  rec_.param_numels.clear();
  rec_.param_bytes = rec_.grad_bytes = rec_.optimizer_bytes = 0;
  for (const auto& p : params) {
    rec_.param_numels.push_back(p.numel());
    rec_.param_elem_bytes = static_cast<int>(p.element_size());
    rec_.param_bytes += bytes_of(p);
  }
  for (const auto& p : params) rec_.grad_bytes += bytes_of(p.grad());
  for (const auto& t : optimizer_state) rec_.optimizer_bytes += bytes_of(t);
  rec_.bucket_bytes = bucket_bytes;
  counted_ = true;
  if (!cpu_) {  // the caching allocator's blocks: each tensor rounded up to 512 B
    const auto r512 = [](std::int64_t b) { return (b + 511) / 512 * 512; };
    std::int64_t p = 0, g = 0;
    for (const auto& t : params) {
      p += r512(static_cast<std::int64_t>(t.nbytes()));
      if (t.grad().defined()) g += r512(static_cast<std::int64_t>(t.grad().nbytes()));
    }
    rec_.param_bytes = p;
    rec_.grad_bytes = g;
    std::int64_t o = 0;
    for (const auto& t : optimizer_state)
      if (t.defined()) o += r512(static_cast<std::int64_t>(t.nbytes()));
    rec_.optimizer_bytes = o;
  }
}

MemoryRecord MemoryMeter::record(std::int64_t batch_size) const {
  MemoryRecord r = rec_;
  r.batch_size = batch_size;
  r.peak_allocated = std::max({whole_peak_, r.forward_backward_peak, r.optimizer_peak, peak()});
  // Steps without phases (a CUDA-graph replay does the whole step at once): the step's peak is one figure.
  if (r.forward_backward_peak == 0 && r.optimizer_peak == 0) r.forward_backward_peak = r.forward_peak = r.peak_allocated;
  if (cpu_) {
    r.peak_reserved = r.peak_allocated;
    r.ooms = cpu_->ooms();
    r.failed_request = cpu_->failed_request();
  } else {
    const auto st = c10::cuda::CUDACachingAllocator::getDeviceStats(dev_.index());
    r.peak_reserved = std::max<std::int64_t>(r.peak_reserved, st.reserved_bytes[0].peak);
    r.alloc_retries = st.num_alloc_retries;
    r.ooms = st.num_ooms;
  }
  return r;
}

}  // namespace autotune
