#include "tuner/converge/lr_sweep_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <ostream>

#include "knobs/error.h"
#include "knobs/model_spec.h"
#include "knobs/numbers.h"
#include "knobs/worker_info.h"
#include "reports/lr_sweep_report.h"
#include "tuner/exec/trial_runner.h"
#include "tuner/exec/worker_client.h"
#include "tuner/measures/journal.h"
#include "tuner/pricing/lr_sweep.h"
#include "tuner/search/ranking.h"

namespace autotune {

namespace fs = std::filesystem;

namespace {

/// What every run of the sweep shares: the options, the workload, the runner and the journal.
struct Sweep {
  const LrSweepOptions& o;
  const WorkloadInfo& w;
  const TrialRunner& runner;
  Journal& journal;
  std::ostream& progress;
  int trials = 0;
};

/// One converge trial of `o.config` at learning rate `lr` on `order`: `max_samples` from `init_from` ("" = the setup's
/// own start), its weights written to `save` when given; journaled, with its progress line.
TrialRecord train(Sweep& s, const std::string& label, double lr, std::int64_t order, std::int64_t max_samples,
                  const std::string& init_from, const std::string& save, std::int64_t smooth) {
  TrialPlan p;
  p.setup = s.o.setup;
  p.setup.data_order = order;
  if (own_optimizer(s.w))  // the task's optimizer() keeps its own lr; the run's is that × lr_scale
    p.setup.lr_scale = lr / s.w.optimizer_lr;
  else p.setup.lr = lr;
  if (!init_from.empty()) p.setup.init_from = init_from;
  p.config = s.o.config;
  p.converge.on = true;
  p.converge.max_seconds = s.o.max_seconds;
  p.converge.max_samples = max_samples;
  p.converge.smooth_samples = smooth;
  p.converge.save_checkpoint = save;
  TrialRecord rec = s.runner.run(p, TrialKind::converge, ++s.trials);
  rec.id = s.journal.append(rec);
  const auto& r = rec.result;
  const bool curve = r.status == TrialStatus::ok && r.converge && !r.converge->points.empty();
  s.progress << fmt::format("[{}] {} (lr {:.3g}), data order {}: {}\n", s.trials, label, lr, order,
                            curve ? fmt::format("{} samples in {:.1f} s, smoothed loss {:.4g}{}",
                                                with_commas(static_cast<double>(r.converge->points.back().samples)),
                                                r.converge->points.back().seconds,
                                                smoothed_loss(r.converge->points, r.converge->points.size() - 1, smooth),
                                                r.converge->stopped == "non_finite" ? " (a non-finite loss stopped it)" : "")
                                  : fmt::format("{}: {}", to_string(r.status), r.message))
             << std::flush;
  return rec;
}

/// The burn-in at the user's rate: its smoothed loss into `out`; returns the checkpoint every arm starts from.
std::string burn_in(Sweep& s, LrSweepSummary& out) {
  const std::string checkpoint = (fs::absolute(out.out_dir) / "checkpoint.pt").string();
  const TrialRecord rec =
      train(s, "burn-in at your rate", out.user_lr, 0, out.horizon.burn_in_samples, "", checkpoint, out.smooth_samples);
  const auto& r = rec.result;
  if (r.status != TrialStatus::ok || !r.converge || r.converge->points.empty() || !fs::exists(checkpoint))
    throw UsageError(
        fmt::format("the burn-in at your learning rate {:.3g} did not train ({}: {}); the sweep needs its checkpoint",
                    out.user_lr, to_string(r.status), r.message.empty() ? rec.outcome : r.message));
  out.burn_in_trial = rec.id;
  out.start_loss = smoothed_loss(r.converge->points, r.converge->points.size() - 1, out.smooth_samples);
  return checkpoint;
}

void check_options(const LrSweepOptions& o) {
  if (fs::exists(o.out_dir) && !fs::is_empty(o.out_dir))
    throw UsageError(fmt::format("{} already exists and is not empty; choose another --out (nothing is overwritten)", o.out_dir));
  if (o.setup.data.empty() && task_of(o.setup.model).empty())
    throw UsageError(
        "a sweep trains on your data: pass --data, or a --task whose dataset() is the data; a synthetic "
        "pool is memorised, so its loss says nothing about a learning rate");
}

}  // namespace

LrSweepSummary run_lr_sweep(const LrSweepOptions& in, std::ostream& progress) {
  LrSweepOptions o = in;
  if (o.worker.empty()) o.worker = default_worker_path(o.setup);
  if (o.out_dir.empty()) o.out_dir = utc_now_formatted("runs/lr-sweep-%Y%m%d-%H%M%S");
  check_options(o);
  validate(o.setup);
  const WorkloadInfo w = describe_workload(o.worker, o.setup);
  if (o.setup.data.empty() && !w.task_data)
    throw UsageError("a sweep trains on your data: the task has no dataset() (its batches are random); add one");

  LrSweepSummary out;
  out.workload = w.name;
  out.data = o.setup.data.empty() ? w.python_task + " dataset()" : o.setup.data;
  out.config = o.config;
  out.global_batch =
      global_batch(o.config, o.config.has("batch_size") ? std::stoll(o.config.get("batch_size")) : w.default_batch_size);
  out.user_lr = trained_lr(o.setup, w);
  out.run_samples = o.run_samples;
  out.smooth_samples = o.smooth_samples > 0 ? o.smooth_samples : std::max<std::int64_t>(1024, 8 * out.global_batch);
  const LrSweepRule rule;
  out.horizon = plan_lr_horizon(o.run_samples, out.smooth_samples, rule);
  out.out_dir = o.out_dir;

  fs::create_directories(fs::path(o.out_dir) / "trials");
  Journal journal((fs::path(o.out_dir) / "journal.sqlite").string());
  const TrialRunner runner(
      RunnerOptions(o.worker, (fs::path(o.out_dir) / "trials").string()).timeout_seconds(2 * o.max_seconds + 120));
  Sweep s{o, w, runner, journal, progress};
  progress << fmt::format("lr-sweep: {}\n", out.horizon.why) << std::flush;
  const std::string checkpoint = burn_in(s, out);
  for (std::vector<double> next = next_lr_multiples({}, rule); !next.empty(); next = next_lr_multiples(out.arms, rule)) {
    for (double m : next)
      for (std::int64_t order = 0; order < o.orders; ++order) {
        const TrialRecord rec = train(s, lr_multiple_text(m), out.user_lr * m, order, out.horizon.horizon_samples, checkpoint, "",
                                      out.smooth_samples);
        out.runs.push_back({m, order, rec.result.converge ? rec.result.converge->points : std::vector<CurvePoint>{}});
        out.run_trials.push_back(rec.id);
      }
    out.arms = judge_lr_arms(out.runs, out.start_loss, out.horizon.horizon_samples, out.smooth_samples, rule);
  }
  out.verdict = judge_lr_sweep(out.arms, out.runs, out.horizon.horizon_samples, out.smooth_samples);
  write_file_atomic((fs::path(o.out_dir) / "lr-sweep.md").string(), render_lr_sweep_markdown(out));
  write_file_atomic((fs::path(o.out_dir) / "lr-sweep.json").string(), render_lr_sweep_json(out).dump(2) + "\n");
  return out;
}

}  // namespace autotune
