#include "workloads/engine/dist/ddp.h"

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/default_comm_hooks.hpp>

#include <algorithm>
#include <limits>

#include "profiler/spans.h"

namespace autotune::dist {

namespace {

constexpr std::int64_t kMiB = 1 << 20;
// DDP's broadcast buffer for the start-up and per-forward broadcasts (_DEFAULT_BUCKET? Python uses 250 MiB).
constexpr std::size_t kBroadcastBucketBytes = 250u * kMiB;

class Bf16CompressHook : public c10d::CppCommHookInterface<c10::intrusive_ptr<c10d::ProcessGroup>> {
 public:
  using CppCommHookInterface::CppCommHookInterface;
  c10::intrusive_ptr<c10::ivalue::Future> runHook(c10d::GradBucket& bucket) override {
    at::Tensor buffer = bucket.getBufferRef();
    std::vector<at::Tensor> tensors = {buffer.div(state_->getSize()).to(at::kBFloat16)};
    auto fut = state_->allreduce(tensors)->getFuture();
    return fut->then(
        [buffer](c10::ivalue::Future& f) {
          buffer.copy_(f.value().toTensorVector().at(0));
          return c10::IValue(buffer);
        },
        c10::TensorType::get());
  }
};

}  // namespace

DdpOptions DdpOptions::from(const Settings& s) {
  DdpOptions o;
  o.bucket_mb = s.bucket_mb;
  o.first_bucket_mb = s.first_bucket_mb;
  o.grad_as_bucket_view = s.grad_as_bucket_view;
  o.static_graph = s.static_graph;
  o.broadcast_buffers = s.broadcast_buffers;
  o.comm_hook = s.comm_hook;
  return o;
}

std::unique_ptr<c10d::CommHookInterface> make_bf16_compress_hook(c10::intrusive_ptr<c10d::ProcessGroup> pg) {
  return std::make_unique<Bf16CompressHook>(std::move(pg));
}

StepComm summarize_comm(const std::vector<CommInterval>& v, double cutoff) {
  StepComm s;
  prof::Spans<double> iv;
  for (const auto& c : v) {
    ++s.collectives;
    s.bytes += c.bytes;
    iv.emplace_back(c.start, c.end);  // an unfinished one (end 0) is empty: merged() drops it
  }
  const auto u = prof::merged(std::move(iv));
  s.comm_seconds = prof::length(u);
  s.overlap_seconds = prof::overlap(u, {{std::numeric_limits<double>::lowest(), cutoff}});
  return s;
}

DataParallel::DataParallel(Group& group, std::vector<torch::Tensor> params, std::vector<torch::Tensor> buffers,
                           const DdpOptions& o)
    : g_(group), o_(o), world_(group.pg->getSize()), params_(std::move(params)), buffers_(std::move(buffers)) {
  c10d::verify_params_across_processes(g_.pg, params_, std::nullopt);  // same shapes on every rank, as DDP checks
  {                                                                    // Every rank starts from rank 0's weights and buffers.
    torch::NoGradGuard ng;
    std::vector<at::Tensor> state = params_;
    state.insert(state.end(), buffers_.begin(), buffers_.end());
    c10d::broadcast_coalesced(g_.pg, state, kBroadcastBucketBytes, 0);
  }
  // Buckets as DDP (torch 2.11, find_unused_parameters=False) makes them: the first step runs with one
  // bucket holding everything, because the order gradients arrive in is not known yet; after it the
  // Reducer rebuilds the buckets in that order, the first capped at first_bucket_mb and the others at
  // bucket_mb (an empty per-bucket list tells it to use those two caps).
  auto [indices, limits] = c10d::compute_bucket_assignment_by_size(params_, {SIZE_MAX}, std::vector<bool>(params_.size(), false));
  std::reverse(indices.begin(), indices.end());
  std::unordered_map<size_t, std::string> names;
  reducer_ = std::make_unique<c10d::Reducer>(params_, indices, g_.pg, std::vector<bool>(params_.size(), false),
                                             o_.bucket_mb * kMiB, /*find_unused_parameters=*/false, o_.grad_as_bucket_view, names,
                                             o_.first_bucket_mb * kMiB, /*skip_all_reduce_unused_params=*/false,
                                             /*use_python_reducer=*/false, std::vector<int64_t>{});
  if (o_.static_graph) reducer_->set_static_graph();
  if (o_.comm_hook == "fp16") {
    reducer_->register_builtin_comm_hook(c10d::BuiltinCommHookType::FP16_COMPRESS);
    hook_desc_ = "fp16 compression (the Reducer's built-in FP16_COMPRESS hook)";
  } else if (o_.comm_hook == "bf16") {
    reducer_->register_comm_hook(make_bf16_compress_hook(g_.pg));
    hook_desc_ = "bf16 compression (autotune's C++ hook)";
  } else {
    hook_desc_ = "allreduce (the Reducer's default, averaged)";
  }
}

DataParallel::~DataParallel() = default;

void DataParallel::before_forward(int micro, int micro_steps) {
  g_.recorder->enable(true);  // the step's collectives from here on
  if (micro == 0 && o_.broadcast_buffers && !buffers_.empty()) {
    torch::NoGradGuard ng;
    c10d::broadcast_coalesced(g_.pg, buffers_, kBroadcastBucketBytes, 0);
  }
  if (micro == micro_steps - 1) {
    // After the first synchronised backward the Reducer knows the order gradients arrive in and
    // rebuilds its buckets to match (a broadcast of the new assignment from rank 0); then never again.
    if (reducer_->rebuild_buckets()) rebuilt_ = true;
    reducer_->prepare_for_forward();
  }
}

void DataParallel::before_backward(int micro, int micro_steps) {
  if (micro == micro_steps - 1) reducer_->prepare_for_backward({});
}

StepComm DataParallel::after_backward(int micro, int micro_steps) {
  if (micro != micro_steps - 1) return {};
  if (o_.static_graph && !first_sync_done_) reducer_->delay_all_reduce();  // DDP queues this after the first backward
  first_sync_done_ = true;
  // The Reducer waited for every bucket's work; their completion callbacks may still be running.
  auto v = g_.recorder->take(std::chrono::milliseconds(100));
  double cutoff = 0;
  for (const auto& c : v)
    if (c.op == "allreduce") cutoff = std::max(cutoff, c.start);
  StepComm s = summarize_comm(v, cutoff);
  s.intervals = std::move(v);
  return s;
}

std::vector<std::int64_t> DataParallel::bucket_bytes() const {
  std::vector<std::int64_t> out;
  for (const auto& b : reducer_->get_grad_buckets(/*return_zero_tensors=*/true))
    out.push_back(static_cast<std::int64_t>(b.getBuffer().nbytes()));
  return out;
}

std::string DataParallel::describe() const {
  const auto b = bucket_bytes();
  std::string sizes;
  for (size_t i = 0; i < b.size() && i < 6; ++i) sizes += fmt::format("{}{:.2f}", i ? ", " : "", b[i] / double(kMiB));
  if (b.size() > 6) sizes += ", …";
  return fmt::format("{} buckets ({} MB){}; {}", b.size(), sizes, rebuilt_ ? ", rebuilt in gradient order after step 1" : "",
                     hook_desc_);
}

}  // namespace autotune::dist
