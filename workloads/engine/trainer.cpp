#include "workloads/engine/trainer.h"

#include <c10/util/Exception.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include <cmath>

#include "knobs/error.h"
#include "profiler/host_memory.h"
#include "profiler/step_timer.h"
#include "workloads/engine/environment.h"
#include "workloads/registry.h"
#include "workloads/workload.h"

namespace autotune {

namespace {

/// Applies `threads` before any parallel work: torch::set_num_threads sizes the intra-op pool.
/// "default" leaves torch's own choice (one thread per physical core) and records it.
void apply_threads(const Config& cfg, TrialResult& r) {
  const std::string req = cfg.get("threads", "default");
  if (req != "default") torch::set_num_threads(std::stoi(req));
  r.applied.push_back({"threads", req, std::to_string(torch::get_num_threads())});
}

torch::Device resolve_device(const std::string& requested, const EnvFingerprint& env) {
  if (requested == "cuda" && !env.cuda_available)
    throw UsageError("device 'cuda' requested but no CUDA device is available here; allowed: auto, cpu");
  if (requested == "cuda" || (requested == "auto" && env.cuda_available)) return torch::Device(torch::kCUDA, 0);
  return torch::Device(torch::kCPU);
}

/// One training step. Phases are timed on the host; on CPU that is the real cost of each phase.
struct Stepper {
  Workload& w;
  torch::optim::Optimizer& opt;
  torch::Device device;
  std::int64_t batch_size;
  StepTimer& timer;

  /// Returns the step's loss (read back every step: the `log_every` knob does not exist yet).
  double step() {
    timer.begin_step();
    Batch host = w.next_batch(batch_size);
    timer.mark(Phase::data);
    Batch dev = device.is_cpu() ? host : host.to(device);
    timer.mark(Phase::h2d);
    torch::Tensor loss = w.loss(dev);
    timer.mark(Phase::forward);
    loss.backward();
    timer.mark(Phase::backward);
    opt.step();
    opt.zero_grad();
    timer.mark(Phase::optimizer);
    const double value = loss.item<double>();
    timer.end_step();
    return value;
  }
};

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
  r.batch_size = plan.config.has("batch_size") ? std::stoll(plan.config.get("batch_size"))
                                               : workload->info().default_batch_size;
  r.applied.push_back({"batch_size", plan.config.get("batch_size", "workload default"), std::to_string(r.batch_size)});

  try {
    apply_threads(plan.config, r);
    workload->build(plan.seed);
    workload->module().to(device);
    workload->module().train();
    torch::optim::AdamW opt(workload->module().parameters(), torch::optim::AdamWOptions(1e-3));
    StepTimer timer(clock);
    Stepper stepper{*workload, opt, device, r.batch_size, timer};
    const MeasureOptions& m = plan.measure;

    // Warm-up: blocks of `block` steps until two consecutive blocks agree within settle_tolerance,
    // at least warmup_min_steps and warmup_min_seconds, at most warmup_max_steps.
    const int block = std::max(2, m.warmup_min_steps / 2);
    double prev_block = -1;
    const double w0 = clock.now_seconds();
    while (true) {
      const double b0 = clock.now_seconds();
      for (int i = 0; i < block; ++i) {
        const double loss = stepper.step();
        ++r.warmup_steps;
        if (!std::isfinite(loss)) {
          r.status = TrialStatus::non_finite;
          r.message = fmt::format("non-finite loss ({}) at warm-up step {}", loss, r.warmup_steps);
          break;
        }
      }
      if (r.status == TrialStatus::non_finite) break;
      const double per_step = (clock.now_seconds() - b0) / block;
      const bool settled = prev_block > 0 && std::abs(per_step - prev_block) <= m.settle_tolerance * prev_block;
      prev_block = per_step;
      const bool long_enough = r.warmup_steps >= m.warmup_min_steps && clock.now_seconds() - w0 >= m.warmup_min_seconds;
      if ((settled && long_enough) || r.warmup_steps >= m.warmup_max_steps) break;
    }
    r.warmup_seconds = clock.now_seconds() - w0;

    if (r.status != TrialStatus::non_finite) {
      timer.reset();
      for (int wi = 0; wi < m.windows && r.status != TrialStatus::non_finite; ++wi) {
        Window win;
        const double s0 = clock.now_seconds();
        while (win.steps < m.window_min_steps || clock.now_seconds() - s0 < m.window_min_seconds) {
          const double loss = stepper.step();
          ++win.steps;
          win.samples += r.batch_size;
          r.losses.push_back(loss);
          if (!std::isfinite(loss)) {
            ++r.non_finite_steps;
            r.status = TrialStatus::non_finite;
            r.message = fmt::format("non-finite loss ({}) at measured step {}", loss, r.losses.size());
            break;
          }
        }
        win.seconds = clock.now_seconds() - s0;
        r.windows.push_back(win);
      }
      r.breakdown = {timer.mean_ms(Phase::data),     timer.mean_ms(Phase::h2d),       timer.mean_ms(Phase::forward),
                     timer.mean_ms(Phase::backward), timer.mean_ms(Phase::optimizer), timer.mean_ms(Phase::other)};
      if (r.status != TrialStatus::non_finite) r.status = TrialStatus::ok;
    }
  } catch (const c10::OutOfMemoryError& e) {  // derives from c10::Error: catch it first
    r.status = TrialStatus::oom;
    r.message = e.what_without_backtrace();
  } catch (const c10::Error& e) {
    r.status = TrialStatus::error;
    r.message = e.what_without_backtrace();
  } catch (const std::bad_alloc&) {
    r.status = TrialStatus::oom;
    r.message = "host memory exhausted (std::bad_alloc)";
  }
  // One line only: LibTorch messages can carry a multi-line context.
  if (auto nl = r.message.find('\n'); nl != std::string::npos) r.message.resize(nl);
  r.peak_rss_bytes = peak_rss_bytes();
  r.wall_seconds = clock.now_seconds() - t_start;
  return r;
}

}  // namespace autotune
