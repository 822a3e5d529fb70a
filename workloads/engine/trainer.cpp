#include "workloads/engine/trainer.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "profiler/analysis.h"
#include "profiler/cupti_collector.h"
#include "profiler/trace_export.h"

#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <cmath>

#include "knobs/error.h"
#include "knobs/knob.h"
#include "profiler/host_memory.h"
#include "profiler/step_timer.h"
#include "workloads/engine/autocast.h"
#include "workloads/engine/cuda_graph_step.h"
#include "workloads/engine/environment.h"
#include "workloads/engine/grad_scaler.h"
#include "workloads/engine/optim.h"
#include "workloads/engine/staging.h"
#include "workloads/registry.h"
#include "workloads/workload.h"

namespace autotune {

namespace {

torch::Device resolve_device(const std::string& requested, const EnvFingerprint& env) {
  if (requested == "cuda" && !env.cuda_available)
    throw UsageError("device 'cuda' requested but no CUDA device is available here; allowed: auto, cpu");
  if (requested == "cuda" || (requested == "auto" && env.cuda_available)) return torch::Device(torch::kCUDA, 0);
  return torch::Device(torch::kCPU);
}

/// The plan's knobs as typed values; knobs that do not apply here fall back to their baseline and are
/// listed in result.skipped with the reason.
struct Settings {
  std::int64_t batch_size = 0;
  std::string threads = "default", precision = "fp32", optimizer_impl = "loop", zero_grad = "zeros";
  int grad_accum = 1, log_every = 1;
  std::string checkpointing = "none", memory_format = "contiguous";
  bool cudnn_benchmark = false, pin_memory = false, cuda_graphs = false;
  std::string decode = "jpeg_full", augment_device = "cpu";
  int num_workers = 0, prefetch = 2;
};

Settings resolve(const TrialPlan& plan, const WorkloadInfo& w, const TargetInfo& target, TrialResult& r) {
  auto value = [&](const std::string& knob) {
    const Knob& k = find_knob(knob);
    const std::string base = k.baseline(knob == "batch_size" ? std::to_string(w.default_batch_size) : "");
    if (!plan.config.has(knob)) return base;
    const std::string v = plan.config.get(knob);
    if (auto why = k.value_not_applicable(v, target)) {
      r.skipped.push_back({knob, fmt::format("{}={}: {}; ran with {}", knob, v, *why, base)});
      return base;
    }
    return v;
  };
  Settings s;
  s.batch_size = std::stoll(value("batch_size"));
  s.threads = value("threads");
  s.precision = value("precision");
  s.optimizer_impl = value("optimizer_impl");
  s.zero_grad = value("zero_grad");
  s.grad_accum = std::stoi(value("grad_accum"));
  s.log_every = std::stoi(value("log_every"));
  s.checkpointing = value("checkpointing");
  s.memory_format = value("memory_format");
  s.cudnn_benchmark = value("cudnn_benchmark") == "true";
  s.pin_memory = value("pin_memory") == "true";
  s.cuda_graphs = value("cuda_graphs") == "on";
  s.decode = value("decode");
  s.num_workers = std::stoi(value("num_workers"));
  s.prefetch = std::stoi(value("prefetch"));
  s.augment_device = value("augment_device");
  if (s.augment_device == "gpu" && s.decode != "cache") {
    r.skipped.push_back({"augment_device",
                         "augment_device=gpu: needs decode=cache (the GPU crops the cache's fixed-size images; "
                         "JPEG files differ in size); ran with cpu"});
    s.augment_device = "cpu";
  }
  if (s.cuda_graphs) {
    // Refuse what cannot be captured, with the reason; the trial then runs without graphs.
    std::string why;
    if (s.optimizer_impl != "fused") why = "needs optimizer_impl=fused (its step counters live on the device)";
    else if (s.checkpointing != "none") why = "checkpointing replays RNG state from the host, which a graph cannot";
    else if (s.precision == "amp_fp16") why = "the fp16 GradScaler is not captured (use amp_bf16, which needs no scaler)";
    else if (s.grad_accum > 1) why = "grad_accum > 1 is not captured (one micro-batch per replay)";
    if (!why.empty()) {
      r.skipped.push_back({"cuda_graphs", "cuda_graphs=on: " + why + "; ran with off"});
      s.cuda_graphs = false;
    }
  }
  return s;
}

/// "(64, 256, 256, 3)"
std::string shape(const torch::Tensor& t) {
  std::string s = "(";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + ")";
}

/// Autocast dtype of a matmul under the trial's precision: the proof that autocast is on.
std::string probe_autocast_dtype(const torch::Device& dev, bool enabled, c10::ScalarType dtype) {
  AutocastGuard g(dev.type(), enabled, dtype);
  const auto a = torch::ones({4, 4}, torch::TensorOptions().device(dev));
  return std::string(c10::toString(torch::mm(a, a).scalar_type()));
}

void to_channels_last(torch::nn::Module& m) {
  // Module::to has no memory_format: convert every 4-D parameter (conv weights) in place.
  torch::NoGradGuard no_grad;
  for (auto& p : m.parameters())
    if (p.dim() == 4) p.set_data(p.contiguous(torch::MemoryFormat::ChannelsLast));
}

bool first_conv_weight_channels_last(torch::nn::Module& m) {
  for (auto& p : m.parameters())
    if (p.dim() == 4) return p.is_contiguous(torch::MemoryFormat::ChannelsLast);
  return false;
}

/// The training step with every knob applied. Phases are timed on the host; on a GPU a phase's host
/// time is its launch time unless it syncs (window boundaries synchronise, so throughput is exact).
class Stepper {
 public:
  Stepper(Workload& w, AdamW& opt, torch::Device dev, const Settings& s, StepTimer& timer)
      : w_(w), opt_(opt), dev_(dev), s_(s), timer_(timer) {
    amp_ = s.precision == "amp_fp16" || s.precision == "amp_bf16";
    amp_dtype_ = s.precision == "amp_fp16" ? torch::kFloat16 : torch::kBFloat16;
    if (s.precision == "amp_fp16") scaler_ = std::make_unique<GradScaler>(dev);
    if (s.pin_memory) stager_ = std::make_unique<PinnedStager>(dev);
  }

  /// One optimizer step over grad_accum micro-batches. Losses are read every log_every steps.
  void step() {
    timer_.begin_step();
    if (s_.cuda_graphs) {
      graphed_step();
      return;
    }
    torch::Tensor step_loss;
    for (int micro = 0; micro < s_.grad_accum; ++micro) {
      const Batch b = fetch();
      torch::Tensor loss;
      {
        AutocastGuard guard(dev_.type(), amp_, amp_dtype_);
        loss = w_.loss(b);
      }
      if (s_.grad_accum > 1) loss = loss / s_.grad_accum;
      timer_.mark(Phase::forward);
      (scaler_ ? scaler_->scale(loss) : loss).backward();
      timer_.mark(Phase::backward);
      step_loss = step_loss.defined() ? step_loss + loss.detach() : loss.detach();
    }
    if (scaler_) {
      if (opt_.unscales_in_step()) {
        scaler_->unscale(opt_.params(), /*check_only=*/true);  // fused unscales in-kernel
        opt_.step(scaler_->scale_tensor(), scaler_->found_inf());
      } else {
        scaler_->unscale(opt_.params());
        opt_.step({}, scaler_->found_inf());
      }
      pending_skips_.push_back(scaler_->found_inf().clone());
      scaler_->update();
    } else {
      opt_.step();
    }
    opt_.zero_grad(s_.zero_grad == "none");
    timer_.mark(Phase::optimizer);
    pending_losses_.push_back(step_loss.to(torch::kFloat32));
    if (static_cast<int>(pending_losses_.size()) >= s_.log_every) flush();
    timer_.end_step();
  }

  /// The data phase (next batch on the host) and the H2D phase (to the device, in the model's
  /// memory format), each timed.
  Batch fetch() {
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
    if (s_.memory_format == "channels_last" && b.input.dim() == 4)
      b.input = b.input.contiguous(torch::MemoryFormat::ChannelsLast);
    return b;
  }

  /// cuda_graphs: data and H2D as usual, then one replay does forward, backward and optimizer (its
  /// time is attributed to the forward phase). The graph is captured on the first call (warm-up).
  void graphed_step() {
    const Batch b = fetch();
    if (!graphed_) graphed_ = std::make_unique<GraphedStep>(w_, opt_, dev_, amp_, amp_dtype_, b);
    pending_losses_.push_back(graphed_->step(b).to(torch::kFloat32));
    timer_.mark(Phase::forward);
    if (static_cast<int>(pending_losses_.size()) >= s_.log_every) flush();
    timer_.end_step();
  }

  /// Reads the losses kept on the device (one sync for log_every steps).
  void flush() {
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

  std::vector<double>& losses() { return losses_; }
  std::vector<bool>& skips() { return skips_; }
  int reads() const { return reads_; }
  GradScaler* scaler() { return scaler_.get(); }
  PinnedStager* stager() { return stager_.get(); }
  GraphedStep* graphed() { return graphed_.get(); }
  const std::string& augment_proof() const { return augment_proof_; }
  bool amp() const { return amp_; }
  c10::ScalarType amp_dtype() const { return amp_dtype_; }

 private:
  Workload& w_;
  AdamW& opt_;
  torch::Device dev_;
  const Settings& s_;
  StepTimer& timer_;
  bool amp_ = false;
  c10::ScalarType amp_dtype_ = torch::kBFloat16;
  std::unique_ptr<GradScaler> scaler_;
  std::unique_ptr<PinnedStager> stager_;
  std::unique_ptr<GraphedStep> graphed_;
  std::vector<torch::Tensor> pending_losses_, pending_skips_;
  std::string augment_proof_;
  std::vector<double> losses_;
  std::vector<bool> skips_;
  int reads_ = 0;
};

void sync(const torch::Device& d) {
  if (d.is_cuda()) torch::cuda::synchronize(d.index());
}

}  // namespace

TrialResult run_trial(const TrialPlan& plan) {
  SteadyClock clock;
  const double t_start = clock.now_seconds();
  TrialResult r;
  r.workload = plan.workload;
  r.config = plan.config;
  r.env = environment_fingerprint();
  r.host_total_bytes = host_total_bytes();

  auto workload = make_workload(plan.workload);  // UsageError propagates: the plan itself is wrong
  const torch::Device device = resolve_device(plan.device, r.env);
  r.device = device.str();
  const WorkloadInfo& info = workload->info();
  TargetInfo target;
  target.cuda = device.is_cuda();
  target.gpu_count = target.cuda ? r.env.device_count : 0;
  target.cpu_cores = r.env.cpu_cores;
  target.conv_model = info.conv_model;
  target.image_data = info.image_data;
  target.block_model = info.block_model;
  target.data = plan.data.empty() ? "" : (info.image_data ? "images" : "tokens");
  target.data_cache = !plan.data_cache.empty();
  const Settings s = resolve(plan, info, target, r);
  r.batch_size = s.batch_size;

  try {
    // Process-wide settings first, before any parallel or CUDA work. The host allocator keeps freed
    // tensor memory (no munmap + page faults for every step's re-allocations): part of the engine, on
    // for every trial, recorded with the measured faults per step.
    r.host_malloc = retain_freed_host_memory();
    if (s.threads != "default") torch::set_num_threads(std::stoi(s.threads));
    if (s.precision == "tf32")  // one API only (mixing old and new setters breaks the getters)
      for (auto op : {at::Float32Op::MATMUL, at::Float32Op::CONV})
        at::globalContext().setFloat32Precision(at::Float32Backend::CUDA, op, at::Float32Precision::TF32);
    if (target.cuda && info.conv_model) at::globalContext().setBenchmarkCuDNN(s.cudnn_benchmark);

    BuildOptions bo;
    bo.seed = plan.seed;
    bo.image_size = plan.image_size;
    bo.checkpointing = s.checkpointing;
    bo.data = plan.data;
    bo.data_cache = plan.data_cache;
    bo.decode = s.decode;
    bo.num_workers = s.num_workers;
    bo.prefetch = s.prefetch;
    bo.batch_size = s.batch_size;
    bo.max_bad_share = plan.max_bad_share;
    bo.augment_device = s.augment_device;
    bo.device = device;
    workload->build(bo);
    torch::nn::Module& model = workload->module();
    model.to(device);
    if (s.memory_format == "channels_last") to_channels_last(model);
    model.train();
    auto opt = make_adamw(s.optimizer_impl, model.parameters(), AdamWOptions{});
    StepTimer timer(clock);
    Stepper stepper(*workload, *opt, device, s, timer);
    const MeasureOptions& m = plan.measure;

    // Proofs: what each knob observably did (KNOBS.md "proof").
    auto applied = [&](const std::string& knob, const std::string& req, const std::string& obs) {
      r.applied.push_back({knob, req, obs});
    };
    applied("batch_size", plan.config.get("batch_size", "workload default"), std::to_string(s.batch_size));
    applied("threads", s.threads, fmt::format("torch::get_num_threads() = {}", torch::get_num_threads()));
    {
      std::string obs = "autocast matmul dtype " + probe_autocast_dtype(device, stepper.amp(), stepper.amp_dtype());
      if (stepper.scaler()) obs += fmt::format(", GradScaler scale {}", stepper.scaler()->current_scale());
      if (target.cuda)
        obs += ", CUDA matmul fp32 precision " +
               at::precision2str(at::globalContext().float32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL));
      applied("precision", s.precision, obs);
    }
    applied("optimizer_impl", s.optimizer_impl, "AdamW " + opt->name());
    applied("grad_accum", std::to_string(s.grad_accum),
            fmt::format("{} micro-batches of {} per optimizer step", s.grad_accum, s.batch_size));
    {
      const auto [ck, n] = workload->checkpointed_blocks();
      if (n > 0) applied("checkpointing", s.checkpointing, fmt::format("{} of {} blocks recompute in backward", ck, n));
    }
    if (info.conv_model)
      applied("memory_format", s.memory_format,
              fmt::format("first conv weight channels_last = {}", first_conv_weight_channels_last(model)));
    if (target.cuda && info.conv_model)
      applied("cudnn_benchmark", s.cudnn_benchmark ? "true" : "false",
              fmt::format("at::globalContext().benchmarkCuDNN() = {}", at::globalContext().benchmarkCuDNN()));

    // Warm-up: blocks of steps until two consecutive blocks agree within settle_tolerance, at least
    // warmup_min_steps and warmup_min_seconds, at most warmup_max_steps. (cuDNN autotuning and
    // allocator growth happen here, never in a measured window.)
    const int block = std::max(2, m.warmup_min_steps / 2);
    double prev_block = -1;
    const double w0 = clock.now_seconds();
    while (true) {
      sync(device);
      const double b0 = clock.now_seconds();
      for (int i = 0; i < block; ++i) stepper.step();
      stepper.flush();
      sync(device);
      r.warmup_steps += block;
      const double per_step = (clock.now_seconds() - b0) / block;
      const bool settled = prev_block > 0 && std::abs(per_step - prev_block) <= m.settle_tolerance * prev_block;
      prev_block = per_step;
      const bool long_enough = r.warmup_steps >= m.warmup_min_steps && clock.now_seconds() - w0 >= m.warmup_min_seconds;
      if ((settled && long_enough) || r.warmup_steps >= m.warmup_max_steps) break;
    }
    r.warmup_seconds = clock.now_seconds() - w0;
    // zero_grad's proof: after a step's zero_grad, grads are undefined (none) or zero (zeros).
    if (s.cuda_graphs) {
      applied("zero_grad", s.zero_grad,
              "not applied under cuda_graphs: the captured backward overwrites grads in the graph's pool");
    } else {
      const auto& g = model.parameters().front().grad();
      applied("zero_grad", s.zero_grad,
              g.defined() ? "grads defined after zero_grad (zeros)" : "grads undefined after zero_grad");
    }
    r.warmup_losses = stepper.losses();
    for (double l : stepper.losses())
      if (!std::isfinite(l)) {
        r.status = TrialStatus::non_finite;
        r.message = fmt::format("non-finite loss ({}) during warm-up", l);
      }
    stepper.losses().clear();
    stepper.skips().clear();
    const int reads_before = stepper.reads();

    if (!plan.trace.empty() && r.status != TrialStatus::non_finite) {
      // A traced trial (never the timed one): untraced reference steps, then the same number traced.
      const int n = plan.trace_steps;
      sync(device);
      double t0 = clock.now_seconds();
      for (int i = 0; i < n; ++i) stepper.step();
      stepper.flush();
      sync(device);
      const double untraced = (clock.now_seconds() - t0) / n;
      prof::CuptiCollector cupti;
      std::string why;
      bool gpu_trace = false;
      if (device.is_cuda()) gpu_trace = cupti.start(why);
      else why = "no CUDA device in this trial: host-only profile (phase times, no GPU timeline)";
      // Host ranges go on the collector's clock when it runs (else steady-clock nanoseconds).
      const double host_ref = clock.now_seconds();
      const std::int64_t base_ns = gpu_trace ? cupti.now_ns() : static_cast<std::int64_t>(host_ref * 1e9);
      auto to_ns = [&](double t) { return base_ns + static_cast<std::int64_t>((t - host_ref) * 1e9); };
      const std::int64_t tid = static_cast<std::int64_t>(::syscall(SYS_gettid));
      std::vector<prof::Activity> ranges;
      // External correlation: one id per (step, phase segment), pushed when the segment begins, so
      // each CUDA call carries the phase that issued it (CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0).
      int traced_step = 0;
      bool pushed = false;
      auto ext_id = [](int step, int segment) {
        return static_cast<std::uint64_t>(step + 1) * 64 + static_cast<std::uint64_t>(segment) + 1;
      };
      if (gpu_trace)
        timer.set_segment_hook([&](int segment) {
          if (pushed) cupti.pop();
          cupti.push(ext_id(traced_step, segment));
          pushed = true;
        });
      auto range = [&](const std::string& name, double a, double b, int step, std::uint64_t ext = 0) {
        prof::Activity x;
        x.kind = prof::ActKind::range;
        x.name = name;
        x.start_ns = to_ns(a);
        x.end_ns = to_ns(b);
        x.step = step;
        x.tid = tid;
        x.external_id = ext;
        ranges.push_back(x);
      };
      timer.take_intervals();
      timer.record_intervals(true);
      const auto data_before = workload->data_stats();
      t0 = clock.now_seconds();
      for (int i = 0; i < n; ++i) {
        traced_step = i;
        const double s0 = clock.now_seconds();
        stepper.step();
        range("step", s0, clock.now_seconds(), i);
        int segment = 0;
        for (const auto& iv : timer.take_intervals())
          range(phase_name(iv.phase), iv.t0, iv.t1, i, gpu_trace ? ext_id(i, segment++) : 0);
      }
      stepper.flush();
      if (pushed) cupti.pop();
      timer.set_segment_hook(nullptr);
      sync(device);  // the last step's GPU work completes inside the traced window
      const double traced = (clock.now_seconds() - t0) / n;
      timer.record_intervals(false);
      prof::ActivityStream stream = gpu_trace ? cupti.stop() : prof::ActivityStream{};
      stream.records.insert(stream.records.end(), ranges.begin(), ranges.end());
      stream.device_name = r.env.device_name;
      stream.pid = static_cast<int>(::getpid());
      prof::AnalysisOptions ao;
      ao.flops_per_sample = workload->flops_per_sample();
      ao.samples_per_step = s.batch_size * s.grad_accum;
      ao.precision = s.precision;
      nlohmann::json pj = prof::to_json(prof::analyze(stream, ao));
      nlohmann::json knobs = nlohmann::json::array();  // only knobs that apply to this workload here
      for (const auto& k : pj["verdict_knobs"])
        if (!find_knob(k.get<std::string>()).not_applicable(target)) knobs.push_back(k);
      pj["verdict_knobs"] = knobs;
      pj["mode"] = gpu_trace ? "cupti" : "host-only";
      pj["reason"] = why;
      pj["untraced_step_ms"] = untraced * 1e3;
      pj["traced_step_ms"] = traced * 1e3;
      pj["inflation"] = untraced > 0 ? traced / untraced : 0.0;
      pj["trace"] = plan.trace;
      // The loader during the traced steps: how busy its threads were, how long the step waited.
      if (const auto d = workload->data_stats(); d && data_before) {
        const double wall = traced * n;
        pj["loader"] = {{"num_workers", d->num_workers},
                        {"utilisation",
                         d->num_workers > 0 && wall > 0
                             ? (d->worker_busy_seconds - data_before->worker_busy_seconds) / (d->num_workers * wall)
                             : 0.0},
                        {"wait_ms_per_step", (d->wait_seconds - data_before->wait_seconds) * 1e3 / n}};
      }
      write_file_atomic(plan.trace, prof::chrome_trace(stream).dump() + "\n");
      r.profile = pj.dump();
      r.status = TrialStatus::ok;
    } else if (r.status != TrialStatus::non_finite) {
      if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
      const std::int64_t retries_before =
          device.is_cuda() ? c10::cuda::CUDACachingAllocator::getDeviceStats(device.index()).num_alloc_retries : 0;
      timer.reset();
      int measured_steps = 0;
      const std::int64_t faults_before = minor_page_faults();
      for (int wi = 0; wi < m.windows; ++wi) {
        Window win;
        sync(device);
        const double s0 = clock.now_seconds();
        while (win.steps < m.window_min_steps || clock.now_seconds() - s0 < m.window_min_seconds) {
          stepper.step();
          ++win.steps;
          win.samples += s.batch_size * s.grad_accum;
        }
        sync(device);
        win.seconds = clock.now_seconds() - s0;
        r.windows.push_back(win);
        measured_steps += win.steps;
      }
      if (measured_steps > 0) r.minor_faults_per_step = static_cast<double>(minor_page_faults() - faults_before) / measured_steps;
      stepper.flush();  // outside the windows: the last partial batch of losses
      r.losses = stepper.losses();
      for (double l : r.losses) r.non_finite_steps += std::isfinite(l) ? 0 : 1;
      for (bool sk : stepper.skips()) r.scaler_skips += sk ? 1 : 0;
      if (auto* st = stepper.stager())
        applied("pin_memory", "true",
                fmt::format("staged batch is_pinned() = {}; {} pinned buffers allocated for {} staged batches", st->last_pinned(),
                            st->allocations(), st->staged()));
      else if (target.cuda)
        applied("pin_memory", "false",
                plan.data.empty() ? "no host-to-device copy: synthetic batches are made on the device"
                                  : "pageable host tensors, blocking copies");
      if (auto* g = stepper.graphed())
        applied("cuda_graphs", "on", fmt::format("whole step captured once; {} replays", g->replays()));
      else if (target.cuda) applied("cuda_graphs", "off", "eager: every kernel launched from the host");
      if (const auto d = workload->data_stats()) {
        r.data = *d;
        if (info.image_data) {
          applied("decode", s.decode,
                  fmt::format("{} images decoded by {} ({} bad, skipped)", d->images_ok, d->decode, d->images_bad));
          if (!stepper.augment_proof().empty()) applied("augment_device", s.augment_device, stepper.augment_proof());
          else if (target.cuda)
            applied("augment_device", s.augment_device, "crop/flip/normalise in the loader on the CPU; float32 batches copied");
        }
        applied("num_workers", std::to_string(s.num_workers),
                fmt::format("{} loader threads; the training thread waited {:.3f} s for {} batches", d->num_workers,
                            d->wait_seconds, d->batches));
        applied("prefetch", std::to_string(s.prefetch),
                fmt::format("at most {} batches in flight", s.prefetch * std::max(1, d->num_workers)));
        workload->check_data();  // too much bad data: the trial fails with the counts
      }
      applied("log_every", std::to_string(s.log_every),
              fmt::format("{} loss reads for {} measured steps", stepper.reads() - reads_before, measured_steps));
      r.breakdown = {timer.mean_ms(Phase::data),     timer.mean_ms(Phase::h2d),       timer.mean_ms(Phase::forward),
                     timer.mean_ms(Phase::backward), timer.mean_ms(Phase::optimizer), timer.mean_ms(Phase::other)};
      if (device.is_cuda()) {
        const auto st = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
        r.peak_device_bytes = st.allocated_bytes[0].peak;
        r.alloc_retries = st.num_alloc_retries - retries_before;
        r.device_total_bytes = static_cast<std::int64_t>(at::cuda::getDeviceProperties(device.index())->totalGlobalMem);
      }
      if (r.non_finite_steps > 0) {
        r.status = TrialStatus::non_finite;
        r.message = fmt::format("{} of {} measured losses are non-finite", r.non_finite_steps, r.losses.size());
      } else {
        r.status = TrialStatus::ok;
      }
    }
    r.flops_per_sample = workload->flops_per_sample();
  } catch (const c10::OutOfMemoryError& e) {  // derives from c10::Error: catch it first
    r.status = TrialStatus::oom;
    r.message = e.what_without_backtrace();
  } catch (const c10::Error& e) {
    r.status = TrialStatus::error;
    r.message = e.what_without_backtrace();
  } catch (const std::bad_alloc&) {
    r.status = TrialStatus::oom;
    r.message = "host memory exhausted (std::bad_alloc)";
  } catch (const std::exception& e) {  // data errors: a bad folder, too many bad images, a loader failure
    r.status = TrialStatus::error;
    r.message = e.what();
    if (const auto d = workload->data_stats()) r.data = *d;
  }
  // One line only: LibTorch messages can carry a multi-line context.
  if (auto nl = r.message.find('\n'); nl != std::string::npos) r.message.resize(nl);
  r.peak_rss_bytes = peak_rss_bytes();
  r.wall_seconds = clock.now_seconds() - t_start;
  return r;
}

}  // namespace autotune
