#include "workloads/engine/trainer.h"

#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "knobs/error.h"
#include "knobs/resolve.h"
#include "knobs/target.h"
#include "profiler/host_memory.h"
#include "knobs/host_load.h"
#include "knobs/noise_trajectory.h"
#include "profiler/step_timer.h"
#include "workloads/engine/autocast.h"
#include "workloads/engine/device_holders.h"
#include "workloads/engine/device_memory.h"
#include "workloads/engine/dist/ddp.h"
#include "workloads/engine/dist/process_group.h"
#include "workloads/engine/environment.h"
#include "workloads/engine/host_heap.h"
#include "workloads/engine/optim.h"
#include "workloads/engine/stepper.h"
#include "workloads/engine/traced_steps.h"
#include "workloads/engine/weights_file.h"
#include "workloads/registry.h"
#include "workloads/workload.h"

namespace autotune {

namespace {

torch::Device resolve_device(const std::string& requested, const EnvFingerprint& env, int local_rank) {
  if (requested == "cuda" && !env.cuda_available)
    throw UsageError("device 'cuda' requested but no CUDA device is available here; allowed: auto, cpu");
  if (requested == "cuda" || (requested == "auto" && env.cuda_available)) {
    if (local_rank >= env.device_count)
      throw UsageError(fmt::format("LOCAL_RANK={} but this machine has {} GPUs: one rank per GPU", local_rank, env.device_count));
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(local_rank));
  }
  return torch::Device(torch::kCPU);
}

/// A data-parallel rank's progress, overwritten in place at each phase: "step 12 backward". When a
/// trial hangs, the launcher reads every rank's file to say which rank stopped where.
class ProgressFile {
 public:
  explicit ProgressFile(const std::string& path) {
    if (!path.empty()) fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  }
  ~ProgressFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  void write(const char* phase, std::int64_t step) {
    if (fd_ < 0) return;
    char buf[64];
    const int n = std::snprintf(buf, sizeof buf, "step %lld %-9s\n", static_cast<long long>(step), phase);
    if (n > 0) (void)!::pwrite(fd_, buf, static_cast<size_t>(n), 0);
  }

 private:
  int fd_ = -1;
};

/// A test hook (tests/workloads/ddp_test.cpp): AUTOTUNE_TEST_FAULT="crash@R:S" or "hang@R:S" makes rank
/// R abort or stop responding at the start of step S, to prove the launcher fails the trial, names the
/// rank and leaves nothing behind. Unset in every real run.
struct Fault {
  std::string kind;
  int rank = -1;
  std::int64_t step = -1;
  static Fault from_environment() {
    Fault f;
    const char* v = std::getenv("AUTOTUNE_TEST_FAULT");
    if (!v || !*v) return f;
    char kind[16] = {0};
    int r = -1;
    long long s = -1;
    if (std::sscanf(v, "%15[a-z]@%d:%lld", kind, &r, &s) == 3) {
      f.kind = kind;
      f.rank = r;
      f.step = s;
    }
    return f;
  }
  void maybe_fire(int rank, std::int64_t step) const {
    if (rank != this->rank || step != this->step) return;
    if (kind == "crash") std::abort();
    if (kind == "hang")
      while (true) ::pause();
  }
};

/// Autocast dtype of a matmul under the trial's precision: the proof that autocast is on.
std::string probe_autocast_dtype(const torch::Device& dev, bool enabled, c10::ScalarType dtype) {
  AutocastGuard g(dev.type(), enabled, dtype);
  const auto a = torch::ones({4, 4}, torch::TensorOptions().device(dev));
  return std::string(c10::toString(torch::mm(a, a).scalar_type()));
}

void to_channels_last(const std::vector<torch::Tensor>& params) {
  // Module::to has no memory_format: convert every 4-D parameter (conv weights) in place.
  torch::NoGradGuard no_grad;
  for (auto p : params)
    if (p.dim() == 4) p.set_data(p.contiguous(torch::MemoryFormat::ChannelsLast));
}

bool first_conv_weight_channels_last(const std::vector<torch::Tensor>& params) {
  for (const auto& p : params)
    if (p.dim() == 4) return p.is_contiguous(torch::MemoryFormat::ChannelsLast);
  return false;
}

/// One trial in this process. run() takes the steps in order: apply the process-wide settings,
/// build, warm up, then either measure the windows or trace (a traced trial is never a timed one).
/// Each knob records what it observably did ("proof") in result.applied.
class Trial {
 public:
  /// Throws UsageError for a plan that names an unknown workload or an unavailable device.
  Trial(const TrialPlan& plan, const Clock& clock, const std::string& progress_path)
      : plan_(plan), clock_(clock), workload_(make_workload(plan.setup)), timer_(clock) {
    r_.workload = workload_->info().name;
    r_.config = plan.config;
    r_.env = environment_fingerprint();
    r_.host_total_bytes = host_total_bytes();
    denv_ = dist::DistEnv::from_environment();
    Config config = plan.config;
    // Under torchrun or srun the environment says how many ranks there are; a config that names
    // another count was meant for another launch.
    if (denv_.distributed() && !config.has("ranks")) config.set("ranks", std::to_string(denv_.world));
    const int ranks = std::stoi(config.get("ranks", "1"));
    if (ranks != denv_.world)
      throw UsageError(
          denv_.distributed()
              ? fmt::format("the config asks for ranks={} but the launcher started WORLD_SIZE={} processes", ranks, denv_.world)
              : fmt::format("ranks={} needs {} processes: run it through `autotune` (it starts the ranks), "
                            "torchrun or srun — this worker was started alone",
                            ranks, ranks));
    device_ = resolve_device(plan.setup.device, r_.env, denv_.local_rank);
    r_.device = device_.str();
    target_ = make_target(workload_->info(), r_.env, plan.setup);
    // Under torchrun or srun the launcher placed the ranks: this process's CPU set (one core under
    // `srun -c1`) says nothing about how many ranks the allocation holds; the tuner resolves alike.
    target_.launcher_ranks = denv_.distributed() && denv_.launcher != "autotune";
    res_ = resolve(config, workload_->info(), target_);
    if (denv_.distributed()) {
      progress_ = std::make_unique<ProgressFile>(progress_path);
      fault_ = Fault::from_environment();
    }
    r_.skipped = res_.skipped;
    r_.batch_size = res_.settings.batch_size;
    if (plan.converge.on && !plan.converge.save_checkpoint.empty() && std::filesystem::exists(plan.converge.save_checkpoint))
      throw UsageError(fmt::format("{}: already exists; a weights file is never overwritten (choose another path)",
                                   plan.converge.save_checkpoint));
    if (plan.converge.on && (!plan.converge.val_data.empty() || plan.converge.val_needed))
      throw UsageError("a held-out loss (--val-data, --val-every): the C++ worker does not evaluate on held-out data; the "
                       "Python worker does (a --task with val_dataset(), or --model with --val-data)");
    if (plan.converge.on && !plan.converge.ramp.empty() && res_.settings.cuda_graphs)
      throw UsageError("a batch ramp changes grad_accum mid-run, which a captured CUDA graph cannot: use cuda_graphs=off");
    // Before anything is built, so the model's tensors are counted; a cap not above what is in use
    // already is a usage error (exit 2), like an unavailable device.
    if (!plan.setup.memory_cap.empty() || plan.memory_probe.on)
      meter_ = std::make_unique<MemoryMeter>(device_, plan.setup.memory_cap.empty() ? 0 : parse_size(plan.setup.memory_cap, "--memory-cap"));
  }

  /// Never throws for a trial failure: OOM, non-finite loss and errors become a status and a message.
  TrialResult run() {
    try {
      apply_process_settings();
      if (denv_.distributed()) join();
      build();
      if (plan_.memory_probe.on) {
        memory_probe();
      } else if (plan_.noise.on) {
        noise_scale();  // untimed, from the first step: no warm-up to settle
      } else if (plan_.converge.on) {
        converge();  // the time from the first step is the measurement: no warm-up either
      } else {
        warm_up();
        if (r_.status != TrialStatus::non_finite) {
          if (plan_.trace.empty()) measure();
          else trace();
        }
      }
      r_.flops_per_sample = workload_->flops_per_sample();
      if (ddp_ && plan_.trace.empty() && r_.status == TrialStatus::ok) gather_ranks();
    } catch (const c10::OutOfMemoryError& e) {  // derives from c10::Error: catch it first
      fail(TrialStatus::oom, e.what_without_backtrace());
    } catch (const c10::Error& e) {
      fail(TrialStatus::error, e.what_without_backtrace());
    } catch (const std::bad_alloc&) {
      fail(TrialStatus::oom, "host memory exhausted (std::bad_alloc)");
    } catch (const std::exception& e) {  // data errors: a bad folder, too many bad images, a loader failure
      fail(TrialStatus::error, e.what());
      if (const auto d = workload_->data_stats()) r_.data = *d;
    }
    return finish();
  }

 private:
  const Settings& s() const { return res_.settings; }
  void applied(const std::string& knob, const std::string& requested, const std::string& observed) {
    r_.applied.push_back({knob, requested, observed});
  }
  void fail(TrialStatus st, const std::string& message) {
    r_.status = st;
    r_.message = message;
  }
  TrialResult finish() {
    // One line only: LibTorch messages can carry a multi-line context.
    if (auto nl = r_.message.find('\n'); nl != std::string::npos) r_.message.resize(nl);
    r_.peak_rss_bytes = peak_rss_bytes();
    if (meter_) {
      meter_->close();
      std::int64_t buckets = 0;
      if (r_.dist && !s().grad_as_bucket_view)
        for (std::int64_t b : r_.dist->bucket_bytes) buckets += b;
      if (opt_ && !meter_->states_counted()) meter_->count_states(opt_->params(), opt_->state_tensors(), buckets);
      meter_->set_bucket_bytes(buckets);
      r_.memory = meter_->record(s().batch_size);
      if (device_.is_cuda()) r_.peak_device_bytes = r_.memory->peak_allocated;
    }
    return std::move(r_);
  }

  /// Process-wide settings, before any parallel or CUDA work. The host heap keeps freed tensor memory
  /// (no munmap + page faults for every step's re-allocations): part of the engine, on for every
  /// trial, recorded with the measured faults per step.
  void apply_process_settings() {
    r_.host_malloc = retain_freed_host_memory();
    if (s().threads != "default") torch::set_num_threads(std::stoi(s().threads));
    else if (denv_.local_world > 1)  // torch's default (a thread per core) in every rank would oversubscribe the cores
      torch::set_num_threads(dist::threads_per_rank(target_.cpu_cores, denv_.local_world));
    if (s().precision == "tf32")  // one API only (mixing old and new setters breaks the getters)
      for (auto op : {at::Float32Op::MATMUL, at::Float32Op::CONV})
        at::globalContext().setFloat32Precision(at::Float32Backend::CUDA, op, at::Float32Precision::TF32);
    if (target_.cuda && target_.conv_model) at::globalContext().setBenchmarkCuDNN(s().cudnn_benchmark);
  }

  /// The rendezvous and the process group (NCCL on CUDA, Gloo on CPU).
  void join() {
    if (device_.is_cuda()) c10::cuda::set_device(device_.index());
    group_ = std::make_unique<dist::Group>(
        dist::join(denv_, device_,
                   std::chrono::milliseconds(static_cast<std::int64_t>(1000 * plan_.setup.dist_timeout_seconds))));
    DistInfo d;
    d.world = denv_.world;
    d.backend = group_->backend;
    d.backend_version = group_->backend_version;
    d.launcher = denv_.launcher;
    d.store = group_->store_kind;
    r_.dist = d;
  }

  /// Model, data, optimizer and the step, with every knob applied; then what the build proves.
  void build() {
    BuildOptions bo{plan_.setup, s(), device_};
    bo.rank = denv_.rank;
    bo.world = denv_.world;
    workload_->build(bo);
    if (!plan_.setup.init_from.empty()) {  // the user's weights, before any conversion or optimizer state
      auto state = workload_->named_state();
      load_weights(state, plan_.setup.init_from);
      weights_ = "checkpoint " + plan_.setup.init_from;
    } else if (!plan_.setup.model.empty() && !workload_->info().random_weights) {
      weights_ = "model file " + plan_.setup.model;
    }
    workload_->to_device(device_);
    if (s().memory_format == "channels_last") to_channels_last(workload_->parameters());
    if (group_) {
      ddp_ = std::make_unique<dist::DataParallel>(*group_, workload_->parameters(), workload_->buffers(),
                                                  dist::DdpOptions::from(s()));
    }
    AdamWOptions adam;
    adam.lr = plan_.setup.learning_rate();
    adam.beta1 = plan_.setup.beta1();
    adam.beta2 = plan_.setup.beta2();
    adam.eps = plan_.setup.eps();
    opt_ = make_adamw(s().optimizer_impl, workload_->parameters(), adam);
    stepper_ = std::make_unique<Stepper>(*workload_, *opt_, device_, s(), timer_);
    if (meter_) {
      stepper_->meter(meter_.get());
      meter_->on_states([this] { meter_->count_states(opt_->params(), opt_->state_tensors(), 0); });
    }
    if (ddp_) {
      stepper_->attach(ddp_.get());
      stepper_->on_phase([this](const char* phase, std::int64_t step) {
        progress_->write(phase, step);
        if (phase[0] == 'd') fault_.maybe_fire(denv_.rank, step);
      });
    }
    record_build_proofs();
  }

  void record_build_proofs() {
    applied("batch_size", plan_.config.get("batch_size", "workload default"), std::to_string(s().batch_size));
    applied("threads", s().threads,
            fmt::format("torch::get_num_threads() = {}{}", torch::get_num_threads(),
                        s().threads == "default" && denv_.local_world > 1
                            ? fmt::format(" ({} cores / {} ranks on this host)", target_.cpu_cores, denv_.local_world)
                            : ""));
    std::string obs = "autocast matmul dtype " + probe_autocast_dtype(device_, stepper_->amp(), stepper_->amp_dtype());
    if (stepper_->scaler()) obs += fmt::format(", GradScaler scale {}", stepper_->scaler()->current_scale());
    if (target_.cuda)
      obs += ", CUDA matmul fp32 precision " +
             at::precision2str(at::globalContext().float32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL));
    applied("precision", s().precision, obs);
    applied("optimizer_impl", s().optimizer_impl, "AdamW " + opt_->name());
    applied("grad_accum", std::to_string(s().grad_accum),
            fmt::format("{} micro-batches of {} per optimizer step", s().grad_accum, s().batch_size));
    if (const auto [ck, n] = workload_->checkpointed_blocks(); n > 0)
      applied("checkpointing", s().checkpointing, fmt::format("{} of {} blocks recompute in backward", ck, n));
    if (target_.conv_model)
      applied("memory_format", s().memory_format,
              fmt::format("first conv weight channels_last = {}", first_conv_weight_channels_last(workload_->parameters())));
    if (target_.cuda && target_.conv_model)
      applied("cudnn_benchmark", s().cudnn_benchmark ? "true" : "false",
              fmt::format("at::globalContext().benchmarkCuDNN() = {}", at::globalContext().benchmarkCuDNN()));
  }

  /// Blocks of steps until two consecutive blocks agree within settle_tolerance, at least
  /// warmup_min_steps and warmup_min_seconds, at most warmup_max_steps. (cuDNN autotuning and
  /// allocator growth happen here, never in a measured window.)
  void warm_up() {
    const MeasureOptions& m = plan_.setup.measure;
    const int block = std::max(2, m.warmup_min_steps / 2);
    double prev_block = -1;
    const double w0 = clock_.now_seconds();
    while (true) {
      sync(device_);
      const double b0 = clock_.now_seconds();
      for (int i = 0; i < block; ++i) stepper_->step();
      stepper_->flush();
      sync(device_);
      r_.warmup_steps += block;
      // Ranks decide together (the slowest rank's figures): a rank that stopped warming up a step
      // earlier than another would leave it waiting in an allreduce for ever.
      const double per_step = agree_max((clock_.now_seconds() - b0) / block);
      const bool settled = prev_block > 0 && std::abs(per_step - prev_block) <= m.settle_tolerance * prev_block;
      prev_block = per_step;
      warm_step_seconds_ = per_step;
      const bool long_enough =
          r_.warmup_steps >= m.warmup_min_steps && agree_max(clock_.now_seconds() - w0) >= m.warmup_min_seconds;
      if ((settled && long_enough) || r_.warmup_steps >= m.warmup_max_steps) break;
    }
    r_.warmup_seconds = clock_.now_seconds() - w0;
    // zero_grad's proof: after a step's zero_grad, grads are undefined (none) or zero (zeros).
    if (s().cuda_graphs) {
      applied("zero_grad", s().zero_grad,
              "not applied under cuda_graphs: the captured backward overwrites grads in the graph's pool");
    } else {
      const auto g = workload_->parameters().front().grad();
      applied("zero_grad", s().zero_grad,
              g.defined() ? "grads defined after zero_grad (zeros)" : "grads undefined after zero_grad");
    }
    if (ddp_) record_ddp_proofs();
    r_.warmup_losses = stepper_->losses();
    for (double l : stepper_->losses())
      if (!std::isfinite(l)) fail(TrialStatus::non_finite, fmt::format("non-finite loss ({}) during warm-up", l));
    stepper_->losses().clear();
    stepper_->skips().clear();
  }

  /// A traced trial: the profile of a few steps, and a Chrome trace file.
  void trace() {
    TraceRequest req;
    req.path = plan_.trace;
    req.steps = plan_.trace_steps;
    req.device = device_;
    req.device_name = r_.env.device_name;
    req.samples_per_step = s().batch_size * s().grad_accum;
    req.precision = s().precision;
    req.target = target_;
    if (group_) {  // every rank traces its own steps, into one folder per trial: what HTA's multi-rank analysis loads
      req.rank = denv_.rank;
      req.world = denv_.world;
      req.backend = group_->backend;
      req.path = rank_trace_path(req.path, denv_.rank);
      std::error_code ec;
      std::filesystem::create_directories(std::filesystem::path(req.path).parent_path(), ec);
    }
    r_.profile = run_traced_steps(*stepper_, timer_, clock_, *workload_, req);
    r_.status = TrialStatus::ok;
  }

  /// The trial's GPU as NVML names it ("0000:3b:00.0"): CUDA's device index is not NVML's under CUDA_VISIBLE_DEVICES.
  std::string pci_bus_id() const {
    const cudaDeviceProp* p = at::cuda::getDeviceProperties(device_.index());
    return fmt::format("{:04x}:{:02x}:{:02x}.0", p->pciDomainID, p->pciBusID, p->pciDeviceID);
  }

  /// The measured windows, end to end, then the losses, the proofs that need steps, phases and memory.
  void measure() {
    const int reads_before = stepper_->reads();
    if (device_.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device_.index());
    const std::int64_t retries_before =
        device_.is_cuda() ? c10::cuda::CUDACachingAllocator::getDeviceStats(device_.index()).num_alloc_retries : 0;
    timer_.reset();
    const std::int64_t faults_before = minor_page_faults();
    stepper_->comm() = {};
    const std::string pci = !group_ && device_.is_cuda() ? pci_bus_id() : "";
    const std::optional<DeviceHolders> holders_before = pci.empty() ? std::nullopt : other_device_holders(pci);
    const CpuReading cpus_before = read_cpus();
    const int measured_steps = measure_windows();
    if (!group_) r_.host_load = host_load_between(cpus_before, read_cpus());
    if (holders_before) {  // the larger of the two readings: a program that held the GPU at either end
      const std::optional<DeviceHolders> after = other_device_holders(pci);
      r_.device_holders = after && after->others > holders_before->others ? after : holders_before;
    }
    if (measured_steps > 0) r_.minor_faults_per_step = static_cast<double>(minor_page_faults() - faults_before) / measured_steps;
    stepper_->flush();  // outside the windows: the last partial batch of losses
    r_.losses = stepper_->losses();
    for (double l : r_.losses) r_.non_finite_steps += std::isfinite(l) ? 0 : 1;
    for (bool sk : stepper_->skips()) r_.scaler_skips += sk ? 1 : 0;
    record_run_proofs();
    if (ddp_ && measured_steps > 0) {
      const auto& c = stepper_->comm();
      applied("ranks", std::to_string(s().ranks),
              fmt::format("{} processes over {} ({}{}); {:.1f} collectives and {:.2f} MB per step on rank {}", denv_.world,
                          group_->backend, group_->store_kind,
                          group_->interface.empty() ? "" : "; this rank on " + group_->interface,
                          double(c.collectives) / c.steps, c.bytes / 1e6 / c.steps, denv_.rank));
    }
    applied("log_every", std::to_string(s().log_every),
            fmt::format("{} loss reads for {} measured steps", stepper_->reads() - reads_before, measured_steps));
    r_.breakdown = {timer_.mean_ms(Phase::data),     timer_.mean_ms(Phase::h2d),       timer_.mean_ms(Phase::forward),
                    timer_.mean_ms(Phase::backward), timer_.mean_ms(Phase::optimizer), timer_.mean_ms(Phase::other)};
    if (device_.is_cuda()) {
      const auto st = c10::cuda::CUDACachingAllocator::getDeviceStats(device_.index());
      r_.peak_device_bytes = st.allocated_bytes[0].peak;
      r_.alloc_retries = st.num_alloc_retries - retries_before;
      r_.device_total_bytes = static_cast<std::int64_t>(at::cuda::getDeviceProperties(device_.index())->totalGlobalMem);
    }
    if (r_.non_finite_steps > 0)
      fail(TrialStatus::non_finite,
           fmt::format("{} of {} measured losses are non-finite", r_.non_finite_steps, r_.losses.size()));
    else r_.status = TrialStatus::ok;
  }

  /// A memory probe (knobs/memory.h): a few untimed optimizer steps from the first, the meter reading the
  /// peak of each phase; the record is written by finish(). No warm-up: memory does not settle, it is
  /// allocated — the optimizer's state at the first step, everything else by the second.
  void memory_probe() {
    for (int i = 0; i < plan_.memory_probe.steps; ++i) stepper_->step();
    stepper_->flush();
    r_.warmup_steps = plan_.memory_probe.steps;
    r_.warmup_losses = stepper_->losses();
    applied("memory_probe", std::to_string(plan_.memory_probe.steps),
            fmt::format("{} optimizer steps of {} × {} samples, peaks read around each phase", plan_.memory_probe.steps,
                        s().grad_accum, s().batch_size));
    r_.status = TrialStatus::ok;
  }

  /// A noise-scale trial (knobs/noise_scale.h): steps of grad_accum micro-batches, each recording its
  /// micro-batch and accumulated gradient norms, until the estimate's relative standard error reaches
  /// the plan's target or its step or time cap. Nothing here is timed for throughput.
  void noise_scale() {
    if (group_) throw UsageError("a noise-scale trial runs in one process (ranks=1)");
    const NoisePlan& p = plan_.noise;
    NoiseRecord rec;
    rec.micro_batch = s().batch_size;
    rec.micro_batches = s().grad_accum;
    rec.weights = weights_;
    const double b0 = clock_.now_seconds();
    // Train, record nothing (knobs/noise_scale.h); with windows, at least a window's worth of steps (the first window
    // is as long as the burn-in: knobs/noise_trajectory.h, kMinWindowSteps).
    const int min_burn_in = p.windows > 0 && p.burn_in_seconds > 0 ? kMinWindowSteps : 0;
    while (clock_.now_seconds() - b0 < p.burn_in_seconds || rec.burn_in_steps < min_burn_in) {
      stepper_->step();
      ++rec.burn_in_steps;
    }
    stepper_->flush();
    rec.burn_in_seconds = clock_.now_seconds() - b0;
    const size_t burnt = stepper_->losses().size();
    stepper_->measure_noise();
    const double b = static_cast<double>(rec.micro_batch), B = b * rec.micro_batches;
    const double t0 = clock_.now_seconds();
    rec.stopped = "max_steps";
    // Windows along the run (knobs/noise_trajectory.h): n0 = the burn-in's steps; record until n0·2^windows steps
    // since the first step of training. The first window ends at 2·n0 steps.
    const std::int64_t n0 = rec.burn_in_steps > 0 ? rec.burn_in_steps : p.min_steps;
    if (p.windows > 0) {
      rec.windows = p.windows;
      rec.first_window_end = 2 * n0 * s().batch_size * s().grad_accum;
    }
    for (int i = 1; i <= p.max_steps; ++i) {
      stepper_->step();
      stepper_->flush();
      if (p.windows > 0 && rec.burn_in_steps + i >= (n0 << p.windows)) {
        rec.stopped = "windows";
        break;
      }
      if (p.windows == 0 && i >= p.min_steps && estimate_noise_scale(stepper_->noise_steps(), b, B).rel_se <= p.target_rel_se) {
        rec.stopped = "target";
        break;
      }
      if (clock_.now_seconds() - t0 >= p.max_seconds) {
        rec.stopped = "max_seconds";
        break;
      }
    }
    rec.seconds = clock_.now_seconds() - t0;
    rec.steps = stepper_->noise_steps();
    for (const auto& st : rec.steps) rec.dropped += std::isfinite(st.small_sq) && std::isfinite(st.big_sq) ? 0 : 1;
    r_.warmup_losses.assign(stepper_->losses().begin(), stepper_->losses().begin() + static_cast<std::ptrdiff_t>(burnt));
    r_.losses.assign(stepper_->losses().begin() + static_cast<std::ptrdiff_t>(burnt), stepper_->losses().end());
    const size_t n = r_.losses.size(), tenth = std::max<size_t>(1, n / 10);
    auto mean = [&](size_t from, size_t to) {
      double sum = 0;
      for (size_t i = from; i < to; ++i) sum += r_.losses[i];
      return to > from ? sum / static_cast<double>(to - from) : 0.0;
    };
    if (n > 0) {
      rec.loss_first = mean(0, tenth);
      rec.loss_last = mean(n - tenth, n);
    }
    r_.noise = rec;
    if (const auto d = workload_->data_stats()) r_.data = *d;  // what it was measured on
    if (rec.dropped == static_cast<int>(rec.steps.size()))
      fail(TrialStatus::non_finite, fmt::format("every one of {} noise-scale steps had a non-finite gradient norm", rec.dropped));
    else r_.status = TrialStatus::ok;
  }

  /// A converge trial (knobs/converge.h): trains from step 1, recording each step's loss against the
  /// samples trained and the wall time, until the smoothed loss reaches the target or a cap. Losses are
  /// read as the log_every knob reads them; the steps between two reads get times interpolated between
  /// the reads (a read synchronises the device, so the read's own time is exact).
  void converge() {
    const ConvergePlan& p = plan_.converge;
    ConvergeRecord rec;
    rec.lr = plan_.setup.learning_rate();
    rec.smooth_samples = p.smooth_samples;
    // A batch ramp switches grad_accum and the learning rate after the step that reaches each phase's samples; every
    // rank trains the same steps, so the ranks switch together.
    std::size_t next_phase = 0;
    auto switch_phases = [&](std::int64_t trained) {
      while (next_phase < p.ramp.size() && trained >= p.ramp[next_phase].from_samples) {
        const RampStep& ph = p.ramp[next_phase++];
        stepper_->set_grad_accum(ph.grad_accum);
        opt_->set_lr(ph.lr);
        if (ph.from_samples > 0) rec.switched_at.push_back(trained);
      }
    };
    switch_phases(0);
    std::vector<std::int64_t> step_samples;  // samples trained after each step (a ramp's steps grow)
    sync(device_);
    const double t0 = clock_.now_seconds();
    double last_read = 0;
    std::int64_t samples = 0;
    rec.stopped = "";
    while (rec.stopped.empty()) {
      stepper_->step();
      samples += s().batch_size * stepper_->grad_accum() * denv_.world;
      step_samples.push_back(samples);
      switch_phases(samples);
      const size_t before = rec.points.size();
      const size_t have = stepper_->losses().size();
      if (have == before) {  // not read yet (log_every > 1): decide at the next read
        // Ranks decide together, at reads only: a rank that stopped a step early would leave the others
        // waiting in an allreduce.
        if (group_ || (clock_.now_seconds() - t0 < p.max_seconds && (p.max_samples == 0 || samples < p.max_samples))) continue;
        stepper_->flush();
      }
      const double now = agree_max(clock_.now_seconds() - t0);
      const size_t got = stepper_->losses().size();
      for (size_t i = before; i < got; ++i) {
        const double frac = static_cast<double>(i + 1 - before) / static_cast<double>(got - before);
        rec.points.push_back({step_samples[i], last_read + frac * (now - last_read), stepper_->losses()[i]});
      }
      last_read = now;
      const auto& pts = rec.points;
      if (!std::isfinite(pts.back().loss)) rec.stopped = "non_finite";
      else if (p.target_loss > 0 && pts.back().samples >= p.smooth_samples &&
               smoothed_loss(pts, pts.size() - 1, p.smooth_samples) <= p.target_loss)
        rec.stopped = "target";
      else if (now >= p.max_seconds) rec.stopped = "max_seconds";
      else if (p.max_samples > 0 && samples >= p.max_samples) rec.stopped = "max_samples";
    }
    stepper_->flush();
    r_.losses = stepper_->losses();
    for (double l : r_.losses) r_.non_finite_steps += std::isfinite(l) ? 0 : 1;
    if (!p.save_checkpoint.empty() && denv_.rank == 0) {
      save_weights(workload_->named_state(), p.save_checkpoint);
      rec.checkpoint = p.save_checkpoint;
    }
    r_.converge = rec;
    if (const auto d = workload_->data_stats()) r_.data = *d;
    // A converge trial's one window: the whole run, for its samples/s.
    r_.windows.push_back(Window{static_cast<int>(rec.points.size()), samples, last_read});
    if (rec.stopped == "non_finite") fail(TrialStatus::non_finite, fmt::format("non-finite loss after {} samples", samples));
    else r_.status = TrialStatus::ok;
  }

  /// The largest of every rank's `v` (the value itself in a one-process trial).
  double agree_max(double v) {
    if (!group_) return v;
    std::vector<at::Tensor> t = {torch::full({1}, v, torch::TensorOptions().dtype(torch::kFloat64).device(device_))};
    group_->pg->allreduce(t, c10d::AllreduceOptions{c10d::ReduceOp::MAX})->wait();
    return t[0].item<double>();
  }

  /// `windows` windows of at least window_min_steps steps and window_min_seconds; returns the steps.
  /// With ranks > 1 every rank runs the same number of steps: a window is a step count fixed from the
  /// warm-up's (slowest rank's) step time, window_min_seconds long at that pace.
  int measure_windows() {
    const MeasureOptions& m = plan_.setup.measure;
    int steps = 0;
    int fixed_steps = 0;
    if (group_)
      fixed_steps =
          std::max(m.window_min_steps, static_cast<int>(std::ceil(m.window_min_seconds / std::max(1e-6, warm_step_seconds_))));
    for (int wi = 0; wi < m.windows; ++wi) {
      Window win;
      sync(device_);
      const double s0 = clock_.now_seconds();
      while (group_ ? win.steps < fixed_steps
                    : win.steps < m.window_min_steps || clock_.now_seconds() - s0 < m.window_min_seconds) {
        stepper_->step();
        ++win.steps;
        win.samples += s().batch_size * s().grad_accum * denv_.world;  // all ranks' samples: global throughput
      }
      sync(device_);
      win.seconds = clock_.now_seconds() - s0;
      r_.windows.push_back(win);
      steps += win.steps;
    }
    return steps;
  }

  /// What the Reducer was built with, read back from it after warm-up (buckets are rebuilt in gradient
  /// order after the first step).
  void record_ddp_proofs() {
    const std::string buckets = ddp_->describe();
    r_.dist->bucket_bytes = ddp_->bucket_bytes();
    applied("bucket_mb", std::to_string(s().bucket_mb), buckets);
    applied("first_bucket_mb", std::to_string(s().first_bucket_mb), buckets);
    const auto p = workload_->parameters().front();
    const auto g = p.grad();
    applied("grad_as_bucket_view", s().grad_as_bucket_view ? "true" : "false",
            g.defined() ? fmt::format("first parameter's .grad shares a bucket's storage = {}",
                                      g.storage().nbytes() > static_cast<size_t>(g.nbytes()))
                        : "grads released by zero_grad=none before they could be checked");
    applied("static_graph", s().static_graph ? "true" : "false",
            s().static_graph ? "Reducer::set_static_graph(); first step's allreduce delayed until backward ended"
                             : "dynamic graph (DDP's default)");
    const auto bufs = workload_->buffers();
    applied("broadcast_buffers", s().broadcast_buffers ? "true" : "false",
            bufs.empty() ? "the model has no buffers: nothing to broadcast"
                         : fmt::format("{} buffers {} each step", bufs.size(),
                                       s().broadcast_buffers ? "broadcast from rank 0 before" : "kept per rank, not sent"));
    applied("comm_hook", s().comm_hook, buckets.substr(buckets.find("; ") + 2));
  }

  /// Every rank's figures to rank 0 through the store; rank 0's result carries them all.
  void gather_ranks() {
    const auto& c = stepper_->comm();
    RankStats me;
    me.rank = denv_.rank;
    char host[256] = {0};
    if (gethostname(host, sizeof host - 1) == 0) me.host = host;
    int steps = 0;
    double secs = 0;
    for (const auto& w : r_.windows) {
      steps += w.steps;
      secs += w.seconds;
    }
    me.step_ms = steps ? 1000 * secs / steps : 0;
    me.comm_timed = dist::host_times_collectives(group_->backend);
    if (c.steps > 0) {
      if (me.comm_timed) {  // else the enqueue only: left at 0, the profile measures it
        me.comm_ms_per_step = 1000 * c.comm_seconds / c.steps;
        me.overlap_ms_per_step = 1000 * c.overlap_seconds / c.steps;
      }
      me.collectives_per_step = double(c.collectives) / c.steps;
      me.comm_bytes_per_step = double(c.bytes) / c.steps;
    }
    me.peak_rss_bytes = peak_rss_bytes();
    me.peak_device_bytes = r_.peak_device_bytes;
    const std::string text = nlohmann::json(me).dump();
    group_->store->set(fmt::format("autotune/rank/{}", denv_.rank), std::vector<uint8_t>(text.begin(), text.end()));
    if (denv_.rank != 0) return;
    r_.dist->ranks.clear();
    for (int r = 0; r < denv_.world; ++r) {
      const auto bytes = group_->store->get(fmt::format("autotune/rank/{}", r));
      r_.dist->ranks.push_back(nlohmann::json::parse(std::string(bytes.begin(), bytes.end())).get<RankStats>());
    }
  }
  void record_run_proofs() {
    if (auto* st = stepper_->stager())
      applied("pin_memory", "true",
              fmt::format("staged batch is_pinned() = {}; {} pinned buffers allocated for {} staged batches", st->last_pinned(),
                          st->allocations(), st->staged()));
    else if (target_.cuda)
      applied("pin_memory", "false",
              plan_.setup.data.empty() ? "no host-to-device copy: synthetic batches are made on the device"
                                       : "pageable host tensors, blocking copies");
    if (auto* g = stepper_->graphed())
      applied("cuda_graphs", "on", fmt::format("whole step captured once; {} replays", g->replays()));
    else if (target_.cuda) applied("cuda_graphs", "off", "eager: every kernel launched from the host");
    if (const auto d = workload_->data_stats()) record_data_proofs(*d);
  }

  void record_data_proofs(const DataStats& d) {
    r_.data = d;
    if (target_.image_data) {
      applied("decode", s().decode,
              fmt::format("{} images decoded by {} ({} bad, skipped)", d.images_ok, d.decode, d.images_bad));
      if (!stepper_->augment_proof().empty()) applied("augment_device", s().augment_device, stepper_->augment_proof());
      else if (target_.cuda)
        applied("augment_device", s().augment_device, "crop/flip/normalise in the loader on the CPU; float32 batches copied");
    }
    applied("num_workers", std::to_string(s().num_workers),
            fmt::format("{} loader threads; the training thread waited {:.3f} s for {} batches", d.num_workers, d.wait_seconds,
                        d.batches));
    applied("prefetch", std::to_string(s().prefetch),
            fmt::format("at most {} batches in flight", s().prefetch * std::max(1, d.num_workers)));
    workload_->check_data();  // too much bad data: the trial fails with the counts
  }

  const TrialPlan& plan_;
  const Clock& clock_;
  TrialResult r_;
  std::unique_ptr<Workload> workload_;
  torch::Device device_ = torch::kCPU;
  TargetInfo target_;
  Resolution res_;
  StepTimer timer_;
  std::unique_ptr<AdamW> opt_;
  std::unique_ptr<Stepper> stepper_;
  dist::DistEnv denv_;
  std::unique_ptr<ProgressFile> progress_;
  Fault fault_;
  std::unique_ptr<dist::Group> group_;
  std::unique_ptr<dist::DataParallel> ddp_;
  double warm_step_seconds_ = 0;  ///< the last warm-up block's step time (slowest rank)
  std::unique_ptr<MemoryMeter> meter_;  ///< under a memory cap or in a probe: the device's memory by phase
  std::string weights_ = "random init";  ///< where the weights came from (noise-scale trials record it)
};

}  // namespace

TrialResult run_trial(const TrialPlan& plan, const std::string& progress_path) {
  SteadyClock clock;
  const double t_start = clock.now_seconds();
  TrialResult r = Trial(plan, clock, progress_path).run();
  r.wall_seconds = clock.now_seconds() - t_start;
  return r;
}

}  // namespace autotune
