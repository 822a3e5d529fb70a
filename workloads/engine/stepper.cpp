#include "workloads/engine/stepper.h"

#include <fmt/format.h>

#include "workloads/engine/autocast.h"

namespace autotune {

std::string shape(const torch::Tensor& t) {
  std::string s = "(";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + ")";
}

Stepper::Stepper(Workload& w, AdamW& opt, torch::Device dev, const Settings& s, StepTimer& timer)
    : w_(w), opt_(opt), dev_(dev), s_(s), timer_(timer), accum_(s.grad_accum) {
  amp_ = s.precision == "amp_fp16" || s.precision == "amp_bf16";
  amp_dtype_ = s.precision == "amp_fp16" ? torch::kFloat16 : torch::kBFloat16;
  if (s.precision == "amp_fp16") scaler_ = std::make_unique<GradScaler>(dev);
  if (s.pin_memory) stager_ = std::make_unique<PinnedStager>(dev);
}

void Stepper::step() {
  timer_.begin_step();
  if (s_.cuda_graphs) {
    graphed_step();
    return;
  }
  torch::Tensor step_loss;
  ++steps_;
  std::vector<torch::Tensor> micro_sq;  // noise-scale trials: each micro-batch's |g|²
  for (int micro = 0; micro < accum_; ++micro) {
    phase("data");
    const Batch b = fetch();
    phase("forward");
    if (ddp_) ddp_->before_forward(micro, accum_);
    torch::Tensor loss;
    {
      AutocastGuard guard(dev_.type(), amp_, amp_dtype_);
      loss = w_.loss(b);
    }
    if (accum_ > 1) loss = loss / accum_;
    timer_.mark(Phase::forward);
    phase("backward");
    if (ddp_) ddp_->before_backward(micro, accum_);
    (scaler_ ? scaler_->scale(loss) : loss).backward();
    if (ddp_) {
      const dist::StepComm c = ddp_->after_backward(micro, accum_);
      comm_.collectives += c.collectives;
      comm_.bytes += c.bytes;
      comm_.comm_seconds += c.comm_seconds;
      comm_.overlap_seconds += c.overlap_seconds;
      if (keep_intervals_) intervals_.insert(intervals_.end(), c.intervals.begin(), c.intervals.end());
    }
    timer_.mark(Phase::backward);
    if (noise_) micro_sq.push_back(noise_->take_micro());
    step_loss = step_loss.defined() ? step_loss + loss.detach() : loss.detach();
  }
  if (noise_)  // before the optimizer: the scaler unscales .grad in place there
    noise_steps_.push_back(GradNoiseMeter::step_record(micro_sq, noise_->accumulated(), accum_,
                                                       scaler_ ? scaler_->current_scale() : 1.0));
  phase("optimizer");
  if (ddp_) ++comm_.steps;
  optimizer_step();
  opt_.zero_grad(s_.zero_grad == "none");
  timer_.mark(Phase::optimizer);
  pending_losses_.push_back(step_loss.to(torch::kFloat32));
  if (static_cast<int>(pending_losses_.size()) >= s_.log_every) flush();
  timer_.end_step();
}

void Stepper::set_grad_accum(int accum) {
  if (accum < 1) throw std::invalid_argument("grad_accum must be at least 1");
  if (s_.cuda_graphs && accum != accum_) throw std::invalid_argument("a batch ramp needs eager steps (cuda_graphs=off)");
  accum_ = accum;
}

void Stepper::measure_noise() {
  if (s_.grad_accum < 2 || s_.cuda_graphs || ddp_)
    throw std::invalid_argument("a noise-scale trial needs grad_accum ≥ 2, eager steps (cuda_graphs=off) and one process");
  noise_ = std::make_unique<GradNoiseMeter>(opt_.params());
  noise_steps_.clear();
}

void Stepper::optimizer_step() {
  if (!scaler_) {
    opt_.step();
    return;
  }
  if (opt_.unscales_in_step()) {
    scaler_->unscale(opt_.params(), /*check_only=*/true);  // fused unscales in-kernel
    opt_.step(scaler_->scale_tensor(), scaler_->found_inf());
  } else {
    scaler_->unscale(opt_.params());
    opt_.step({}, scaler_->found_inf());
  }
  pending_skips_.push_back(scaler_->found_inf().clone());
  scaler_->update();
}

Batch Stepper::fetch() {
  Batch b = w_.next_batch(s_.batch_size);
  timer_.mark(Phase::data);
  if (stager_) b = stager_->stage(b);  // pinned, non_blocking
  else if (!dev_.is_cpu())             // pageable: the host waits for the copy (a no-op for synthetic data, made on the device)
    b = {b.input.to(dev_), b.target.to(dev_), b.crops.defined() ? b.crops.to(dev_) : b.crops};
  timer_.mark(Phase::h2d);
  if (b.crops.defined()) {                      // augment_device=gpu: crop, flip, normalise on the device (data phase)
    const bool first = augment_proof_.empty();  // shapes are static: the proof is written once
    if (first)
      augment_proof_ = fmt::format("uint8 {} = {} bytes per batch copied; crop/flip/normalise by grid_sample on {}",
                                   shape(b.input), b.input.nbytes(), b.input.device().str());
    b = w_.finish_on_device(std::move(b));
    if (first) augment_proof_ += fmt::format(" → {} {}", c10::toString(b.input.scalar_type()), shape(b.input));
    timer_.mark(Phase::data);
  }
  if (s_.memory_format == "channels_last" && b.input.dim() == 4) b.input = b.input.contiguous(torch::MemoryFormat::ChannelsLast);
  return b;
}

void Stepper::graphed_step() {
  const Batch b = fetch();
  if (!graphed_) graphed_ = std::make_unique<GraphedStep>(w_, opt_, dev_, amp_, amp_dtype_, b);
  pending_losses_.push_back(graphed_->step(b).to(torch::kFloat32));
  timer_.mark(Phase::forward);
  if (static_cast<int>(pending_losses_.size()) >= s_.log_every) flush();
  timer_.end_step();
}

void Stepper::flush() {
  if (pending_losses_.empty()) return;
  const auto host = torch::stack(pending_losses_).cpu();
  for (int64_t i = 0; i < host.size(0); ++i) losses_.push_back(host[i].item<double>());
  if (!pending_skips_.empty()) {
    const auto sk = torch::cat(pending_skips_).cpu();
    for (int64_t i = 0; i < sk.size(0); ++i) skips_.push_back(sk[i].item<float>() != 0.0f);
  }
  pending_losses_.clear();
  pending_skips_.clear();
  ++reads_;
}

}  // namespace autotune
