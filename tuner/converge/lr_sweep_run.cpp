#include "tuner/converge/lr_sweep_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <ostream>

#include "knobs/adascale.h"
#include "knobs/error.h"
#include "knobs/model_spec.h"
#include "knobs/numbers.h"
#include "knobs/worker_info.h"
#include "reports/lr_sweep_report.h"
#include "tuner/converge/held_out.h"
#include "tuner/exec/trial_runner.h"
#include "tuner/exec/worker_client.h"
#include "tuner/measures/journal.h"
#include "tuner/pricing/lr_beside.h"
#include "tuner/pricing/lr_sweep.h"
#include "tuner/options/tune_options.h"
#include "tuner/search/ranking.h"
#include "tuner/summary/summarize.h"

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
  std::int64_t val_every = 0;  ///< the arms' held-out cadence: the horizon (0: not judged on held-out data)
};

/// One converge trial of `o.config` at learning rate `lr` on `order`: `max_samples` from `init_from` ("" = the setup's
/// own start), its weights written to `save` when given, the held-out loss evaluated every `val_every` samples (0:
/// never); journaled, with its progress line.
TrialRecord train(Sweep& s, const std::string& label, double lr, std::int64_t order, std::int64_t max_samples,
                  const std::string& init_from, const std::string& save, std::int64_t smooth, std::int64_t val_every = 0) {
  TrialPlan p;
  p.setup = s.o.setup;
  p.setup.data_order = order;
  set_trained_lr(p.setup, s.w, lr);
  if (!init_from.empty()) p.setup.init_from = init_from;
  p.config = s.o.config;
  p.converge.on = true;
  p.converge.max_seconds = s.o.max_seconds;
  p.converge.max_samples = max_samples;
  p.converge.smooth_samples = smooth;
  p.converge.save_checkpoint = save;
  if (val_every > 0) {
    p.converge.val_every = val_every;
    p.converge.val_samples = s.o.val_samples;
    p.converge.val_data = s.o.val_data;
    p.converge.val_needed = true;
  }
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

/// The smoothed loss over the curve's first full window (its last point's when it is shorter): where training started.
double first_window_loss(const std::vector<CurvePoint>& c, std::int64_t window) {
  return loss_at_samples(c, std::min(window, c.back().samples), window);
}

/// The burn-in at the user's rate: its smoothed loss into `out`; returns the checkpoint every arm starts from — none
/// ("") when the burn-in diverged (a non-finite loss, or its end above the rule's ratio × its first window's): its
/// weights would start every arm from a broken model, so the arms start where the user's run does instead.
std::string burn_in(Sweep& s, LrSweepSummary& out, const LrSweepRule& rule) {
  const std::string checkpoint = (fs::absolute(out.out_dir) / "checkpoint.pt").string();
  const TrialRecord rec =
      train(s, "burn-in at " + out.centre(), out.user_lr, 0, out.horizon.burn_in_samples, "", checkpoint, out.smooth_samples);
  const auto& r = rec.result;
  if (r.status != TrialStatus::ok || !r.converge || r.converge->points.empty())
    throw UsageError(fmt::format("the burn-in at {} {:.3g} did not train ({}: {}); the sweep starts from it", out.centre(),
                                 out.user_lr, to_string(r.status), r.message.empty() ? rec.outcome : r.message));
  out.burn_in_trial = rec.id;
  const auto& curve = r.converge->points;
  const double first = first_window_loss(curve, out.smooth_samples);
  out.burn_in_first_loss = first;
  out.burn_in_end_loss = smoothed_loss(curve, curve.size() - 1, out.smooth_samples);
  out.start_loss = out.burn_in_end_loss;
  out.burn_in_diverged = !std::isfinite(out.burn_in_end_loss) || r.converge->stopped == "non_finite" ||
                         (std::isfinite(first) && out.burn_in_end_loss > rule.diverged_ratio * first);
  if (!out.burn_in_diverged) {
    if (!fs::exists(checkpoint))
      throw UsageError(fmt::format("the burn-in at {} {:.3g} trained but wrote no checkpoint ({}); the sweep needs it",
                                   out.centre(), out.user_lr, checkpoint));
    return checkpoint;
  }
  s.progress << fmt::format("the burn-in at {} diverged (smoothed loss {:.4g} → {:.4g}): every rate trains from your "
                            "run's start instead of its checkpoint\n",
                            out.centre(), first, out.burn_in_end_loss)
             << std::flush;
  fs::remove(checkpoint);  // a diverged model's weights: nothing starts from them
  out.start_loss = first;
  return "";
}

/// From the start, the loss every arm starts from: the lowest smoothed loss over any first run's first window (every arm
/// starts from the same weights; the lowest is the one least moved by its rate, a rate that diverges at once moves it
/// up). NaN when none is finite.
double start_window_loss(const std::vector<LrRun>& runs, std::int64_t window) {
  double lowest = std::nan("");
  for (const LrRun& r : runs) {
    if (r.curve.empty()) continue;
    const double l = first_window_loss(r.curve, window);
    if (std::isfinite(l) && !(l >= lowest)) lowest = l;
  }
  return lowest;
}

/// Every rate the rule asks for, on every data order, from `checkpoint` ("" = the user's own start), widened while the
/// best sits at an end; then the verdict and the held-out judge into `out`.
void train_and_judge(Sweep& s, LrSweepSummary& out, const LrSweepRule& rule, const std::string& checkpoint) {
  std::string val_source;  // what the held-out set was, as the arms' worker said
  std::int64_t val_samples = 0;
  for (std::vector<double> next = next_lr_multiples({}, rule); !next.empty(); next = next_lr_multiples(out.arms, rule)) {
    for (double m : next)
      for (std::int64_t order = 0; order < s.o.orders; ++order) {
        const TrialRecord rec = train(s, lr_multiple_text(m), out.user_lr * m, order, out.horizon.horizon_samples, checkpoint, "",
                                      out.smooth_samples, s.val_every);
        const auto& c = rec.result.converge;
        out.runs.push_back({m, order, c ? c->points : std::vector<CurvePoint>{}, c ? c->val_points : std::vector<CurvePoint>{}});
        out.run_trials.push_back(rec.id);
        if (c && !c->val_points.empty()) {
          val_source = c->val_source;
          val_samples = c->val_samples;
        }
      }
    if (out.from_start && out.arms.empty()) out.start_loss = start_window_loss(out.runs, out.smooth_samples);
    out.arms = judge_lr_arms(out.runs, out.start_loss, out.horizon.horizon_samples, out.smooth_samples, rule);
  }
  out.verdict = judge_lr_sweep(out.arms, out.runs, out.horizon.horizon_samples, out.smooth_samples, out.centre());
  out.held_out = judge_lr_held_out(out.arms, out.runs, out.verdict, out.horizon.horizon_samples, val_source, val_samples,
                                   out.centre());
}

/// Epochs or tokens refused before anything trains where the size they need cannot be known: an iterable dataset() has
/// no length, and tokens need the model's sequence length.
void check_run_length(const RunLength& len, const WorkloadInfo& w) {
  if (len.unit == RunLength::Unit::epochs && w.task_iterable)
    throw UsageError(fmt::format("--run-length {}: the task's dataset() is iterable, so an epoch has no size; give samples "
                                 "(e.g. 500000)",
                                 describe(len)));
  if (len.unit == RunLength::Unit::tokens && w.block_size <= 0)
    throw UsageError(fmt::format("--run-length {}: tokens need the model's sequence length, and {} has none that autotune "
                                 "knows (a token workload or a --model with a token input has one); give samples or epochs",
                                 describe(len), w.name));
}

/// The user's run in samples (0: not given), and into `out.run_basis` how it was reached: samples as given; tokens ÷ the
/// sequence length; epochs × one pass over the data, which a one-step probe of the config reads first (journaled).
double run_in_samples(Sweep& s, const RunLength& len, LrSweepSummary& out) {
  if (!len.given()) return 0;
  const double seq = static_cast<double>(s.w.block_size);
  if (len.unit == RunLength::Unit::samples) return len.count;
  if (len.unit == RunLength::Unit::tokens) {
    out.run_basis = fmt::format("{} ÷ {:g} tokens a sample (the sequence length) = {} samples", describe(len), seq,
                                with_commas(std::round(len.count / seq)));
    return len.count / seq;
  }
  const TrialRecord probe = train(s, "the data's size: a one-step probe at " + out.centre(), out.user_lr, 0, 1, "", "",
                                  out.smooth_samples);
  const double pass = probe.result.status == TrialStatus::ok ? probe.result.data.one_pass_samples(seq) : 0;
  if (!(pass > 0))
    throw UsageError(fmt::format("--run-length {}: epochs need the data's size, and the one-step probe (trial {}) read none "
                                 "({}); give samples (e.g. 500000)",
                                 describe(len), probe.id,
                                 probe.result.status == TrialStatus::ok ? "its data reports no size" : probe.result.message));
  out.run_basis = fmt::format("{} × {} samples (one pass over the data, as a one-step probe read it: trial {}) = {} samples",
                              describe(len), with_commas(std::round(pass)), probe.id, with_commas(std::round(len.count * pass)));
  return len.count * pass;
}

/// --from-run DIR: the tune run's setup (a rate given on the command line overrides its) and the config `o.at` names;
/// into `out` the user's batch, and at a changed batch the gain r the rule scales the rate by (its prediction, and the
/// centre of the sweep). Returns r (1 at the user's batch).
double from_tune_run(LrSweepOptions& o, LrSweepSummary& out) {
  const RunSummary s = load_run_summary(o.from_run);
  if (s.baseline < 0) throw UsageError(fmt::format("--from-run {}: the run has no baseline to sweep", o.from_run));
  TuneOptions t;
  options_from_json(nlohmann::json::parse(Journal((fs::path(o.from_run) / "journal.sqlite").string()).meta("options")), t);
  const double given_lr = o.setup.lr;
  o.setup = t.setup;
  if (given_lr > 0) o.setup.lr = given_lr;
  out.from_run = o.from_run;
  out.at = o.at;
  out.user_batch = s.user_batch > 0 ? s.user_batch : s.configs[s.baseline].global_batch;
  if (o.at == "your-batch") {
    o.config = s.configs[s.baseline].config;
    return 1;
  }
  if (o.at != "changed-batch")
    throw UsageError(fmt::format("--at '{}' is not allowed; allowed: your-batch, changed-batch", o.at));
  if (s.answer_b.config < 0)
    throw UsageError(fmt::format("--from-run {} --at changed-batch: the run has no answer (b) (no config at another batch "
                                 "was priced); its report says why",
                                 o.from_run));
  o.config = s.configs[s.answer_b.config].config;
  const double r = s.answer_b.lr.given ? s.answer_b.lr.gain  // the run's own, priced at its B̄; without one B/B0
                                       : adascale_gain(static_cast<double>(s.answer_b.global_batch),
                                                       static_cast<double>(out.user_batch), -1);
  out.rule = fmt::format("at global batch {} (yours: {}) AdaScale's gain r = {:.3g}{}", s.answer_b.global_batch,
                         out.user_batch, r,
                         s.answer_b.lr.given ? fmt::format(" at the run's noise scale B̄ = {}", with_commas(s.noise_scale.value))
                                             : " (B/B0: the run measured no noise scale)");
  return r;
}

/// --val-data refused in one line, before anything trains, where it would not be evaluated.
void check_held_out(const LrSweepOptions& o, const WorkloadInfo& w) {
  if (!o.val_data.empty() && !o.held_out)
    throw UsageError(fmt::format("--val-data {} with --held-out off: the held-out data would never be evaluated", o.val_data));
  check_val_data_worker(o.val_data, w);
}

/// The held-out judge's cadence: the horizon, so each arm evaluates where it starts and at the horizon; 0 where there
/// is no held-out data or it is turned off.
std::int64_t held_out_every(const LrSweepOptions& o, const WorkloadInfo& w, std::int64_t horizon) {
  return o.held_out && (!o.val_data.empty() || !w.held_out.empty()) ? horizon : 0;
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
  LrSweepSummary out;
  const double rule_gain = o.from_run.empty() ? 1 : from_tune_run(o, out);
  if (o.worker.empty()) o.worker = default_worker_path(o.setup);
  if (o.out_dir.empty()) o.out_dir = utc_now_formatted("runs/lr-sweep-%Y%m%d-%H%M%S");
  check_options(o);
  validate(o.setup);
  const WorkloadInfo w = describe_workload(o.worker, o.setup);
  if (o.setup.data.empty() && !w.task_data)
    throw UsageError("a sweep trains on your data: the task has no dataset() (its batches are random); add one");

  out.workload = w.name;
  out.data = o.setup.data.empty() ? w.python_task + " dataset()" : o.setup.data;
  out.config = o.config;
  out.global_batch =
      global_batch(o.config, o.config.has("batch_size") ? std::stoll(o.config.get("batch_size")) : w.default_batch_size);
  out.your_lr = trained_lr(o.setup, w);
  out.user_lr = out.your_lr;
  if (out.user_batch == 0) out.user_batch = out.global_batch;
  if (out.changed_batch()) {  // the batch rule's rate for this batch is the centre: the sweep checks it
    if (!lr_rule_known(w.optimizer_family))
      throw UsageError(fmt::format("--at changed-batch: the optimizer ({}) has no learning-rate rule for another batch; sweep "
                                   "that batch with --set and --lr instead",
                                   w.optimizer.empty() ? w.optimizer_family : w.optimizer));
    out.user_lr = lr_at_gain(out.your_lr, rule_gain, w.optimizer_family);
    out.rule += fmt::format(", so your {:.3g} × {} = {:.3g}", out.your_lr, w.optimizer_family == "sgd" ? "r" : "√r", out.user_lr);
  }
  check_run_length(o.run_length, w);
  check_held_out(o, w);
  out.smooth_samples = o.smooth_samples > 0 ? o.smooth_samples : default_smoothing_window(out.global_batch);
  out.out_dir = o.out_dir;

  fs::create_directories(fs::path(o.out_dir) / "trials");
  Journal journal((fs::path(o.out_dir) / "journal.sqlite").string());
  const TrialRunner runner(
      RunnerOptions(o.worker, (fs::path(o.out_dir) / "trials").string()).timeout_seconds(2 * o.max_seconds + 120));
  Sweep s{o, w, runner, journal, progress};
  out.run_samples = run_in_samples(s, o.run_length, out);
  const LrSweepRule& rule = o.rule;
  out.from_start = rule.from_start;
  out.horizon = plan_lr_horizon(out.run_samples, out.smooth_samples, rule, out.centre());
  s.val_every = held_out_every(o, w, out.horizon.horizon_samples);
  if (!out.run_basis.empty()) progress << fmt::format("lr-sweep: your run: {}\n", out.run_basis);
  progress << fmt::format("lr-sweep: {}\n", out.horizon.why) << std::flush;
  if (s.val_every > 0)
    progress << fmt::format("lr-sweep: judged on held-out data too ({}, its first {} samples): each rate evaluates it where "
                            "it starts and at the horizon, off its training clock\n",
                            o.val_data.empty() ? w.held_out : "--val-data " + o.val_data, with_commas(static_cast<double>(o.val_samples)))
             << std::flush;
  const std::string checkpoint = rule.from_start ? std::string() : burn_in(s, out, rule);
  train_and_judge(s, out, rule, checkpoint);
  write_file_atomic((fs::path(o.out_dir) / "lr-sweep.md").string(), render_lr_sweep_markdown(out));
  write_file_atomic((fs::path(o.out_dir) / "lr-sweep.json").string(), render_lr_sweep_json(out).dump(2) + "\n");
  if (!o.from_run.empty())  // beside the tune run: its report prices the batch at the rate measured here
    progress << fmt::format("beside the tune run: {} — `autotune report {}` prices {} with it\n",
                            write_lr_sweep_beside(o.from_run, out, utc_now_iso8601()), o.from_run,
                            out.changed_batch() ? "answer (b)" : "your batch")
             << std::flush;
  return out;
}

}  // namespace autotune
