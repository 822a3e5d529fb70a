#pragma once
// The trial's device memory, read the same way on both kinds of device:
// - CPU: a counting, capped allocator installed as LibTorch's CPU allocator (c10::SetCPUAllocator). It
//   keeps current and peak bytes and refuses an allocation beyond the cap with LibTorch's own
//   OutOfMemoryError, so a CPU host emulates a device of any size (a trial's OOM, a memory model's
//   miss) — the tests of the memory model run without a GPU through it.
// - CUDA: the caching allocator's statistics (allocated, reserved, retries); a cap becomes its memory
//   fraction (setMemoryFraction), which emulates a smaller GPU on one card.
// MemoryMeter reads the peaks per phase of a step (forward+backward vs the optimizer step, each with
// the peak reset around it) and counts the model states from the tensors themselves.
#include <torch/torch.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "knobs/memory.h"

namespace autotune {

/// LibTorch's CPU allocator with a byte count and a cap. Installed once per process (the worker runs
/// one trial); memory allocated before it was installed is freed by its own deleter, never counted.
class CountingCpuAllocator final : public c10::Allocator {
 public:
  /// `cap_bytes` ≤ 0: count only.
  explicit CountingCpuAllocator(std::int64_t cap_bytes) : cap_(cap_bytes) {}
  c10::DataPtr allocate(std::size_t n) override;
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }

  std::int64_t current() const { return current_.load(); }
  std::int64_t peak() const { return peak_.load(); }
  void reset_peak() { peak_.store(current_.load()); }
  std::int64_t cap() const { return cap_; }
  std::int64_t ooms() const { return ooms_.load(); }
  std::int64_t failed_request() const { return failed_.load(); }

  /// Installs a process-wide counter (once; later calls return the same one, whose cap is then `cap_bytes`).
  static CountingCpuAllocator& install(std::int64_t cap_bytes);

 private:
  static void release(void* ctx);
  std::int64_t cap_;
  std::atomic<std::int64_t> current_{0}, peak_{0}, ooms_{0}, failed_{0};
};

/// Peaks per phase of the training step, and the model states counted from the tensors.
class MemoryMeter {
 public:
  /// On the CPU: installs the counting allocator with `cap_bytes` (0: count only). On CUDA: a cap sets the
  /// caching allocator's memory fraction. Throws UsageError when the cap is not above what is in use
  /// already (the context).
  MemoryMeter(torch::Device dev, std::int64_t cap_bytes);

  /// The step enters a phase (Stepper's names: data, forward, backward, optimizer). Three segments, each
  /// with its own peak (max over micro-batches and steps): data+forward, backward, optimizer+zero_grad.
  void enter(const char* phase);
  /// The last step's optimizer phase ends here (call after the last step).
  void close();
  /// The states from the tensors (each storage once): parameters, gradients, the optimizer's state.
  void count_states(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& optimizer_state,
                    std::int64_t bucket_bytes);
  /// Called as the second step's optimizer phase starts — gradients defined, the optimizer's state made
  /// by the first step — to count the states then (after zero_grad(set_to_none) there are no gradients).
  void on_states(std::function<void()> count) { count_ = std::move(count); }
  bool states_counted() const { return counted_; }
  void set_bucket_bytes(std::int64_t b) { rec_.bucket_bytes = b; }
  /// The record so far (peaks over the steps entered).
  MemoryRecord record(std::int64_t batch_size) const;
  std::int64_t current() const;

 private:
  std::int64_t peak() const;
  void reset_peak();
  torch::Device dev_;
  CountingCpuAllocator* cpu_ = nullptr;
  MemoryRecord rec_;
  enum class Seg { none, forward, backward, optimizer } seg_ = Seg::none;
  void close_segment();
  std::int64_t whole_peak_ = 0;
  std::function<void()> count_;
  bool counted_ = false;
};

}  // namespace autotune
