#pragma once
// Memory on the trial's device, as both programs must read it: what a worker measured (MemoryRecord,
// in result.json), a memory probe's plan, sizes as users write them ("12G"), and the model states
// computed exactly from the parameters' sizes (the analytic terms of the tuner's memory model,
// tuner/memory/model.h; the worker counts the same bytes from its tensors and the two must agree).
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "knobs/config.h"

namespace autotune {

/// A memory probe: a short untimed trial that runs `steps` optimizer steps (each of grad_accum
/// micro-steps) with the allocator's peak read around every phase, then writes its MemoryRecord.
struct MemoryProbePlan {
  bool on = false;
  int steps = 3;  ///< ≥ 2: the optimizer's state appears at the first step, its steady peak from the second
};

/// What a worker saw of its device's memory (CPU: the counting allocator the plan's memory cap installs;
/// CUDA: the caching allocator's statistics). Bytes are the allocator's (CUDA rounds each block to 512 B).
struct MemoryRecord {
  std::string allocator;            ///< "cpu-counting" | "cuda-caching"
  std::int64_t capacity_bytes = 0;  ///< what a trial may use: the cap (CPU), the device × memory fraction (CUDA)
  std::int64_t context_bytes = 0;   ///< outside the model: CUDA context + NCCL (CUDA), bytes live before the build (CPU)
  std::int64_t round_bytes = 1;     ///< the allocator's rounding of one tensor (512 on CUDA)
  std::int64_t batch_size = 0;      ///< the micro-batch the peaks belong to
  // Model states, counted from the tensors (each storage once): parameters, their gradients, the
  // optimizer's state (AdamW m, v and foreach/fused's step counters), DDP's gradient buckets.
  std::vector<std::int64_t> param_numels;  ///< every trainable parameter's element count, in order
  int param_elem_bytes = 4;
  std::int64_t param_bytes = 0, grad_bytes = 0, optimizer_bytes = 0, bucket_bytes = 0;
  // Peaks of allocated bytes (max over the steps seen), each phase's reset around it.
  std::int64_t forward_backward_peak = 0;  ///< data, forward and backward of every micro-batch (max of the two below)
  std::int64_t forward_peak = 0;           ///< data and forward: every activation the backward will need is alive at its end
  std::int64_t backward_peak = 0;          ///< backward: activations freed as gradients are made
  std::int64_t optimizer_peak = 0;         ///< the optimizer step and zero_grad
  std::int64_t peak_allocated = 0;         ///< the whole trial after the build
  std::int64_t peak_reserved = 0;          ///< the allocator's reserved high-water (= allocated on the CPU counter)
  int steps = 0;                           ///< optimizer steps the peaks cover
  std::int64_t ooms = 0;                   ///< allocations refused (the trial's status is then oom)
  std::int64_t alloc_retries = 0;          ///< CUDA: the allocator freed its cache and retried
  std::int64_t failed_request = 0;         ///< the refused allocation's size, 0 when none

  std::int64_t states_bytes() const { return param_bytes + grad_bytes + optimizer_bytes + bucket_bytes; }
  std::int64_t peak() const { return forward_backward_peak > optimizer_peak ? forward_backward_peak : optimizer_peak; }
  std::int64_t param_elements() const;
};

/// The model states computed from the parameters' sizes alone — what a config costs before anything runs.
struct StateBytes {
  std::int64_t params = 0, grads = 0, optimizer = 0, buckets = 0;
  std::int64_t total() const { return params + grads + optimizer + buckets; }
};
/// fp32 AdamW: parameters and gradients one copy each, m and v two more; the foreach and fused steps
/// keep a float32 step counter per parameter tensor (the loop keeps it on the host); a data-parallel
/// run without gradient_as_bucket_view keeps a flat bucket copy of the gradients. Each tensor is
/// rounded up to `round` bytes, as the allocator does.
StateBytes analytic_states(const std::vector<std::int64_t>& numels, int elem_bytes, const std::string& optimizer_impl, int ranks,
                           bool gradient_as_bucket_view, std::int64_t round);

/// "512M", "12G", "1.5GiB", "4000000000": bytes (K, M, G, T are powers of 1024). Throws UsageError naming
/// `what` and the allowed forms for anything else ("12Q", "", a negative or zero size).
std::int64_t parse_size(const std::string& text, const std::string& what);
/// "1.50 GiB", "12.0 MiB", "512 B".
std::string format_bytes(std::int64_t bytes);

/// A config's predicted peak as a tune decided on it (plain data: journal meta "memory", the reports).
struct MemoryEstimate {
  Config config;
  bool known = false;
  std::string why_unknown;
  std::int64_t peak = 0, lo = 0, hi = 0;  ///< the allocator's peak per rank and its interval
  std::string phase;                      ///< forward+backward | optimizer
  std::int64_t states = 0, activations = 0, optimizer_transient = 0, per_sample = 0;
  bool fits = true;
  std::string reason;  ///< why it was skipped ("" when it ran)
};

/// What the memory model did in a tune: present (`on`) when the run had a memory cap.
struct MemoryReport {
  bool on = false;
  std::int64_t capacity = 0;
  double margin = 0.05;
  int probes = 0;
  double probe_seconds = 0;
  std::vector<MemoryEstimate> predicted;  ///< every config decided on, in order (skipped ones included)
  std::vector<std::string> misses;        ///< one line each: a trial the model said fits that ran out, or peaked above it
  std::vector<std::string> states_checks; ///< "family: computed X = counted Y" per family probed
  std::string advice;                     ///< when even batch 1 cannot fit (the baseline's family)
  int skipped() const;
  const MemoryEstimate* find(const Config& c) const;
};

void to_json(nlohmann::json& j, const MemoryRecord& m);
void from_json(const nlohmann::json& j, MemoryRecord& m);
void to_json(nlohmann::json& j, const MemoryEstimate& m);
void from_json(const nlohmann::json& j, MemoryEstimate& m);
void to_json(nlohmann::json& j, const MemoryReport& m);
void from_json(const nlohmann::json& j, MemoryReport& m);

}  // namespace autotune
