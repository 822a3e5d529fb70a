#include "workloads/engine/traced_steps.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <torch/cuda.h>

#include "knobs/knob.h"
#include "knobs/protocol.h"
#include "profiler/analysis.h"
#include "profiler/cupti_collector.h"
#include "profiler/trace_export.h"

namespace autotune {

void sync(const torch::Device& d) {
  if (d.is_cuda()) torch::cuda::synchronize(d.index());
}

namespace {

/// External correlation: one id per (step, phase segment), pushed when the segment begins, so each
/// CUDA call carries the phase that issued it (CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0).
std::uint64_t ext_id(int step, int segment) {
  return static_cast<std::uint64_t>(step + 1) * 64 + static_cast<std::uint64_t>(segment) + 1;
}

/// Mean seconds per step of `n` steps, synchronised at both ends.
double timed_steps(Stepper& stepper, const Clock& clock, const torch::Device& dev, int n) {
  sync(dev);
  const double t0 = clock.now_seconds();
  for (int i = 0; i < n; ++i) stepper.step();
  stepper.flush();
  sync(dev);
  return (clock.now_seconds() - t0) / n;
}

/// Records the traced steps: a "step" range each and a range per phase interval, on the collector's
/// clock when it runs (else steady-clock nanoseconds).
class RangeRecorder {
 public:
  RangeRecorder(const Clock& clock, std::int64_t base_ns) : host_ref_(clock.now_seconds()), base_ns_(base_ns) {}
  void add(const std::string& name, double a, double b, int step, std::uint64_t ext = 0) {
    prof::Activity x;
    x.kind = prof::ActKind::range;
    x.name = name;
    x.start_ns = to_ns(a);
    x.end_ns = to_ns(b);
    x.step = step;
    x.tid = tid_;
    x.external_id = ext;
    ranges_.push_back(x);
  }
  /// A collective (steady-clock seconds, as the process group records them; the worker's clock is the
  /// same steady clock) on its own row of the trace.
  void add_comm(const std::string& backend, const dist::CommInterval& c, int step) {
    prof::Activity x;
    x.kind = prof::ActKind::comm;
    x.name = backend + ":" + c.op;
    x.start_ns = to_ns(c.start);
    x.end_ns = to_ns(c.end);
    x.bytes = c.bytes;
    x.step = step;
    x.tid = kCommRow;
    ranges_.push_back(x);
  }
  std::vector<prof::Activity>& ranges() { return ranges_; }
  /// The trace row of the collectives: no thread has this id (Linux's pid_max is at most 2^22).
  static constexpr std::int64_t kCommRow = std::int64_t{1} << 30;

 private:
  std::int64_t to_ns(double t) const { return base_ns_ + static_cast<std::int64_t>((t - host_ref_) * 1e9); }
  double host_ref_;
  std::int64_t base_ns_;
  std::int64_t tid_ = static_cast<std::int64_t>(::syscall(SYS_gettid));
  std::vector<prof::Activity> ranges_;
};

/// The loader during the traced steps: how busy its threads were, how long the step waited.
std::optional<LoaderProfile> loader_profile(const std::optional<DataStats>& before, const std::optional<DataStats>& after,
                                            double wall, int steps) {
  if (!before || !after) return std::nullopt;
  LoaderProfile l;
  l.num_workers = after->num_workers;
  l.utilisation = after->num_workers > 0 && wall > 0
                      ? (after->worker_busy_seconds - before->worker_busy_seconds) / (after->num_workers * wall)
                      : 0.0;
  l.wait_ms_per_step = (after->wait_seconds - before->wait_seconds) * 1e3 / steps;
  return l;
}

}  // namespace

ProfileSummary run_traced_steps(Stepper& stepper, StepTimer& timer, const Clock& clock, Workload& workload,
                                const TraceRequest& req) {
  const int n = req.steps;
  const double untraced = timed_steps(stepper, clock, req.device, n);
  prof::CuptiCollector cupti;
  std::string why;
  bool gpu_trace = false;
  if (req.device.is_cuda()) gpu_trace = cupti.start(why);
  else why = "no CUDA device in this trial: host-only profile (phase times, no GPU timeline)";
  RangeRecorder rec(clock, gpu_trace ? cupti.now_ns() : static_cast<std::int64_t>(clock.now_seconds() * 1e9));
  int traced_step = 0;
  bool pushed = false;
  if (gpu_trace)
    timer.set_segment_hook([&](int segment) {
      if (pushed) cupti.pop();
      cupti.push(ext_id(traced_step, segment));
      pushed = true;
    });
  timer.take_intervals();
  timer.record_intervals(true);
  stepper.take_comm_intervals();
  stepper.keep_comm_intervals(true);
  const auto data_before = workload.data_stats();
  const double t0 = clock.now_seconds();
  for (int i = 0; i < n; ++i) {
    traced_step = i;
    const double s0 = clock.now_seconds();
    stepper.step();
    rec.add("step", s0, clock.now_seconds(), i);
    int segment = 0;
    for (const auto& iv : timer.take_intervals())
      rec.add(phase_name(iv.phase), iv.t0, iv.t1, i, gpu_trace ? ext_id(i, segment++) : 0);
    for (const auto& c : stepper.take_comm_intervals())
      if (c.end > c.start) rec.add_comm(req.backend, c, i);
  }
  stepper.keep_comm_intervals(false);
  stepper.flush();
  if (pushed) cupti.pop();
  timer.set_segment_hook(nullptr);
  sync(req.device);  // the last step's GPU work completes inside the traced window
  const double traced = (clock.now_seconds() - t0) / n;
  timer.record_intervals(false);

  prof::ActivityStream stream = gpu_trace ? cupti.stop() : prof::ActivityStream{};
  stream.records.insert(stream.records.end(), rec.ranges().begin(), rec.ranges().end());
  stream.device_name = req.device_name;
  stream.pid = static_cast<int>(::getpid());
  prof::AnalysisOptions ao;
  ao.flops_per_sample = workload.flops_per_sample();
  ao.samples_per_step = req.samples_per_step;
  ao.precision = req.precision;
  ProfileSummary p = prof::analyze(stream, ao);
  std::vector<std::string> knobs;  // only knobs that apply to this workload here
  for (const auto& k : p.verdict_knobs)
    if (!find_knob(k).not_applicable(req.target)) knobs.push_back(k);
  p.verdict_knobs = knobs;
  p.mode = gpu_trace ? "cupti" : "host-only";
  p.reason = why;
  p.untraced_step_ms = untraced * 1e3;
  p.traced_step_ms = traced * 1e3;
  p.inflation = untraced > 0 ? traced / untraced : 0.0;
  p.trace = req.path;
  p.loader = loader_profile(data_before, workload.data_stats(), traced * n, n);
  write_file_atomic(req.path, prof::trace_text(prof::chrome_trace(stream, req.rank, req.world, req.backend)));
  return p;
}

}  // namespace autotune
