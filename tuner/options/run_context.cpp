#include "tuner/options/run_context.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

#include "knobs/did_you_mean.h"
#include "knobs/error.h"
#include "knobs/knob.h"
#include "knobs/resolve.h"
#include "knobs/worker_info.h"
#include "tuner/pricing/noise_log.h"
#include "tuner/pricing/noise_over_run.h"

namespace autotune {

namespace {

/// The baseline's micro-batch under --effective-batch N: the workload's default when it divides N, else
/// the largest listed batch size that does (grad_accum makes up the rest, up to the knob's 1024). A UsageError
/// naming the reachable values nearest N when none does.
std::int64_t baseline_micro_batch(std::int64_t eb, const KnobSpace& space, const WorkloadInfo& w) {
  std::vector<std::int64_t> listed, ranks = {1};
  for (const auto& [k, vs] : space.axes()) {
    if (k == "batch_size")
      for (const auto& v : vs) listed.push_back(std::stoll(v));
    if (k == "ranks") {
      ranks.clear();
      for (const auto& v : vs) ranks.push_back(std::stoll(v));
    }
  }
  if (listed.empty()) listed = {w.default_batch_size};
  const std::int64_t max_accum = find_knob("grad_accum").max;
  if (eb % w.default_batch_size == 0 && eb / w.default_batch_size <= max_accum) return w.default_batch_size;
  std::int64_t best = 0;
  for (std::int64_t b : listed)
    if (eb % b == 0 && eb / b <= max_accum) best = std::max(best, b);
  if (best > 0) return best;
  // Nothing divides N: the nearest values that listed batch sizes × ranks × grad_accum do reach.
  std::int64_t below = 0, above = 0;
  for (std::int64_t b : listed)
    for (std::int64_t r : ranks) {
      const std::int64_t step = b * r;
      if (eb / step >= 1) below = std::max(below, std::min(eb / step, max_accum) * step);
      const std::int64_t up = ((eb + step - 1) / step) * step;
      if (up / step <= max_accum && (above == 0 || up < above)) above = up;
    }
  std::vector<std::string> names;
  for (std::int64_t b : listed) names.push_back(std::to_string(b));
  std::vector<std::string> near;
  if (below > 0) near.push_back(std::to_string(below));
  if (above > 0) near.push_back(std::to_string(above));
  throw UsageError(fmt::format("--effective-batch {} cannot be reached: no listed batch_size ({}) divides it with grad_accum ≤ "
                               "{}{}; reachable nearby: {}",
                               eb, join(names), max_accum, ranks.size() > 1 || ranks.front() != 1 ? " and ranks" : "",
                               near.empty() ? "none" : join(near)));
}

/// Why a noise scale measured here would say nothing about the user's training, or "".
std::string time_unrankable(const TrialSetup& setup, const WorkloadInfo& w) {
  if (!setup.data.empty() || w.task_data) return "";
  if (!setup.model.empty())
    return "your model trains on random inputs drawn from its batch spec here (no --data): a noise scale of random data says "
           "nothing about your training's";
  if (!setup.plugin.empty())
    return fmt::format("autotune cannot tell what data the plugin's workload {} trains on without --data; pass --data to rank "
                       "a changed batch by time",
                       w.name);
  // What the workload says of its data, without saying "synthetic" twice ("synthetic (8192-sample pool …)").
  std::string data = w.data == "none" ? "" : w.data;
  if (data.rfind("synthetic (", 0) == 0 && data.back() == ')') data = data.substr(11, data.size() - 12);
  return fmt::format("{} trains on synthetic data here{}: a model memorises such a pool, so its noise scale says nothing "
                     "about real training",
                     w.name, data.empty() ? "" : " (" + data + ")");
}

/// Under --effective-batch the baseline's batch and accumulation come from the user's global batch, not from the
/// workload's own batch or PyTorch's grad_accum of 1: the baseline table says so.
void credit_effective_batch(RunContext& ctx, std::int64_t workload_batch, std::int64_t eb) {
  const std::string micro = ctx.baseline.get("batch_size"), accum = ctx.baseline.get("grad_accum");
  const std::string why =
      std::to_string(workload_batch) == micro
          ? fmt::format("your --effective-batch {} = batch {} (the workload's own) × grad_accum {}", eb, micro, accum)
          : fmt::format("your --effective-batch {} = batch {} × grad_accum {} (the workload's own {} does not divide it; "
                        "{} is the largest listed batch that does)",
                        eb, micro, accum, workload_batch, micro);
  auto& sources = ctx.baseline_sources;
  sources.erase(std::remove_if(sources.begin(), sources.end(),
                               [](const BaselineValue& b) { return b.knob == "batch_size" || b.knob == "grad_accum"; }),
                sources.end());
  sources.insert(sources.begin(), {{"batch_size", micro, why}, {"grad_accum", accum, why}});
}

/// The catalog cites torch.optim.AdamW, the optimizer autotune builds (knobs/knob.cpp, cite_defaults). A task's own
/// optimizer() of torch.optim follows the same rule (each torch.optim optimizer with a foreach path picks it through
/// _default_to_fused_or_foreach when foreach and fused are left None): the baseline table names the user's class, and
/// says that an optimizer() setting foreach itself is not PyTorch's default.
void cite_own_optimizer(RunContext& ctx, const WorkloadInfo& w) {
  // torch.optim's optimizers with a foreach implementation in 2.11 (LBFGS and SparseAdam have none)
  static const std::set<std::string> foreach_capable = {"SGD", "Adam", "Adamax", "Adadelta", "Adagrad", "ASGD",
                                                        "NAdam", "RAdam", "RMSprop", "Rprop"};
  const std::string adamw = "torch.optim.AdamW(", prefix = "torch.optim.";
  if (!own_optimizer(w) || w.optimizer.rfind(prefix, 0) != 0 || !foreach_capable.count(w.optimizer.substr(prefix.size())))
    return;
  for (BaselineValue& b : ctx.baseline_sources)
    if (b.knob == "optimizer_impl" && b.source.rfind(adamw, 0) == 0)
      b.source = fmt::format("your optimizer() builds {0}: {0}({1} (unless your optimizer() sets foreach or fused itself)",
                             w.optimizer, b.source.substr(adamw.size()));
}

}  // namespace

RunContext make_context(const TuneOptions& opts, const WorkloadInfo& workload, const EnvFingerprint& env) {
  RunContext ctx;
  ctx.opts = opts;
  ctx.workload = workload;
  ctx.env = env;
  ctx.target = make_target(workload, env, opts.setup);
  ctx.target.launcher_ranks = opts.launcher != "local";  // torchrun or a template places the ranks (knobs/target.h)
  // Slurm places a trial's ranks as the tasks of its step or job (tuner/exec/slurm.h): a launcher, like srun in a
  // template. Local slots need no change: a data-parallel trial runs on the whole host, alone (tune.cpp, whole_host).
  if (executor_places_ranks(opts.exec.executor)) {
    ctx.target.launcher_ranks = true;
    if (opts.exec.slot_cpus > 0) ctx.target.cpu_cores = opts.exec.slot_cpus;
  }
  // Knobs (or single values) that cannot apply here are dropped from the search and reported.
  ctx.space = applicable_space(opts.space, ctx.target, ctx.skipped);
  // Baseline = PyTorch's defaults (batch size: the workload's default). With an effective batch,
  // grad_accum holds micro-batch × accumulation at that value. Runs since the sourced defaults take PyTorch
  // 2.11's own for the user's frontend (knobs/knob.h, pytorch_default) for every knob that applies — also one
  // the space does not search, when it differs from the worker's own default, so every trial starts from
  // what a plain script does; older runs (baseline_defaults "catalog") keep the catalog's first values.
  const std::string b0 = std::to_string(workload.default_batch_size);
  const bool pytorch = opts.baseline_defaults == "pytorch-2.11";
  for (const Knob& k : knob_catalog()) {
    const bool searched =
        std::any_of(ctx.space.axes().begin(), ctx.space.axes().end(), [&](const auto& a) { return a.first == k.name; });
    const std::string wd = k.name == "batch_size" ? b0 : "";
    const auto [value, source] = pytorch ? k.pytorch_default(opts.frontend, ctx.target.cuda, wd)
                                         : std::make_pair(k.baseline(wd), k.default_source);
    const bool differs = value != k.baseline(wd);
    if (searched || (pytorch && differs && !k.not_applicable(ctx.target))) ctx.baseline.set(k.name, value);
    if (searched || differs) ctx.baseline_sources.push_back({k.name, value, source});
  }
  const auto eb = opts.strategy.effective_batch;
  ctx.user_batch = eb > 0 ? eb : workload.default_batch_size;
  ctx.user_batch_source = eb > 0 ? "--effective-batch" : fmt::format("{}'s default batch size", workload.name);
  if (eb > 0) {
    const std::int64_t b = baseline_micro_batch(eb, ctx.space, workload);
    ctx.baseline.set("batch_size", std::to_string(b)).set("grad_accum", std::to_string(eb / b));
  }
  // A noise log comes from the user's own loop on their own data: it prices a changed batch whatever this run trains on.
  ctx.time_unrankable = opts.noise_log.empty() ? time_unrankable(opts.setup, workload) : "";
  ctx.defaults = ctx.baseline.values();
  if (!ctx.defaults.count("batch_size")) ctx.defaults["batch_size"] = b0;
  for (auto& b : ctx.baseline_sources)  // the effective batch moved these from the workload's default
    if (ctx.baseline.has(b.knob)) b.value = ctx.baseline.get(b.knob);
  if (eb > 0) credit_effective_batch(ctx, workload.default_batch_size, eb);
  cite_own_optimizer(ctx, workload);
  return ctx;
}

namespace {

/// The time objective priced by the noise log kept beside the run (tuner/pricing/noise_log.h), read again — nullopt when the run
/// keeps none. A log that no longer reads (edited since) leaves the run unranked by time, saying why.
std::optional<Objective> objective_from_log(const RunContext& ctx, const RecordIndex& index) {
  RunHorizon h;
  h.length = ctx.opts.run_length;
  h.tokens_per_sample = static_cast<double>(ctx.workload.block_size);
  for (const TrialRecord* r : index.first_attempts())  // one pass over the data: its size as the first trial read it
    if (r->result.data.dataset_size > 0) {
      h.dataset_samples = r->result.data.one_pass_samples(h.tokens_per_sample);
      break;
    }
  const std::string path = kept_noise_log(ctx.opts.out_dir);
  if (path.empty()) return std::nullopt;
  NoiseScaleSummary n;
  try {
    NoiseLog log = read_noise_log(path);
    log.path = ctx.opts.noise_log.empty() ? path : ctx.opts.noise_log;  // the reports name the user's file
    const RunIdentity id{ctx.opts.out_dir, ctx.opts.setup.workload, ctx.opts.setup.model, ctx.opts.setup.data};
    n.run_length_error = price_from_log(n, log, h, ctx.user_batch, id);
  } catch (const UsageError& e) {
    n.why_not = e.what();
  }
  n.usable = n.measured && n.run_length_error.empty();
  if (!n.run_length_error.empty()) n.why_not = n.run_length_error;
  return Objective(Objective::Kind::time, ctx.user_batch, n);
}

}  // namespace

Objective objective_for(const RunContext& ctx, const RecordIndex& index) {
  if (ctx.opts.objective != ObjectiveKind::time) return Objective();
  NoiseScaleSummary n;
  if (ctx.opts.noise_scale > 0) {  // given by the user: no trial, no interval of ours
    n.measured = true;
    n.value = n.lo = n.hi = ctx.opts.noise_scale;
    n.early = false;
    n.weights = "given (--noise-scale)";
    n.stopped = "given";
    n.data = ctx.opts.setup.data;
    n.usable = ctx.time_unrankable.empty();
    if (!n.usable) n.why_not = ctx.time_unrankable;
    return Objective(Objective::Kind::time, ctx.user_batch, n);
  }
  if (auto from_log = objective_from_log(ctx, index)) return *from_log;
  const auto& trials = index.noise_trials();
  const TrialRecord* from = nullptr;  // the trial `n` summarizes
  for (auto it = trials.rbegin(); it != trials.rend(); ++it)  // the latest that gave an estimate, else the latest
    if (it == trials.rbegin() || summarize_noise_trial(**it).measured) {
      n = summarize_noise_trial(**it);
      from = *it;
      if (n.measured) break;
    }
  if (n.measured) {
    // Its windows along the run, priced over the user's run; or a calibration by training beside the run
    // (tuner/pricing/noise_over_run.h). A measured summary has its trial's record (summarize_noise_trial).
    RunHorizon h;
    h.length = ctx.opts.run_length;
    h.tokens_per_sample = static_cast<double>(ctx.workload.block_size);
    h.dataset_samples = from->result.data.one_pass_samples(h.tokens_per_sample);
    const RunIdentity id{ctx.opts.out_dir, ctx.opts.setup.workload, ctx.opts.setup.model, ctx.opts.setup.data};
    n.run_length_error = price_noise_scale(n, *from->result.noise, from->result.losses, h, ctx.user_batch, id);
  }
  n.usable = n.measured && ctx.time_unrankable.empty() && n.run_length_error.empty();
  if (!ctx.time_unrankable.empty()) n.why_not = ctx.time_unrankable;
  else if (!n.run_length_error.empty()) n.why_not = n.run_length_error;
  else if (trials.empty()) n.why_not = "no noise-scale trial ran (the budget ended first)";
  return Objective(Objective::Kind::time, ctx.user_batch, n);
}

TrialPlan noise_plan(const RunContext& ctx, double max_seconds) {
  TrialPlan p;
  p.setup = ctx.opts.setup;
  p.config = ctx.baseline;
  // K micro-batches of b = B0 / K: the optimizer sees the user's own batch (its trajectory is theirs), and
  // K ≥ 2 gives the second batch size the estimator needs. 4 when it divides (more micro-batches, less
  // variance per step), else 2, else any small divisor; a prime B0 runs 2 micro-batches of B0.
  const std::int64_t B0 = ctx.user_batch;
  std::int64_t K = 0;
  for (std::int64_t k : {4, 2, 8, 3, 5, 6, 7})
    if (B0 % k == 0 && B0 / k >= 1) {
      K = k;
      break;
    }
  const std::int64_t b = K > 0 ? B0 / K : B0;
  if (K == 0) K = 2;
  p.config.set("batch_size", std::to_string(b)).set("grad_accum", std::to_string(K));
  if (p.config.has("ranks")) p.config.set("ranks", "1");
  p.noise = ctx.opts.noise;
  p.noise.on = true;
  // Three windows of doubling length after the burn-in (knobs/noise_trajectory.h): they end at 8× the burn-in's steps,
  // so from random weights the burn-in is an eighth of the trial's share and the windows the rest.
  p.noise.windows = 3;
  p.noise.max_steps = 100000;  // the windows and the time stop it
  p.noise.max_seconds = std::max(1.0, max_seconds);  // from random weights, less the burn-in (below)
  // A model file's weights are the user's unless its export drew them (an hf: model: random, like a built-in).
  const bool users_weights =
      !ctx.opts.setup.init_from.empty() || (!ctx.opts.setup.model.empty() && !ctx.workload.random_weights);
  p.noise.burn_in_seconds = ctx.opts.noise_burn_in >= 0 ? ctx.opts.noise_burn_in
                            : users_weights            ? 0.0
                                                       : max_seconds / 8;
  if (ctx.opts.noise_burn_in < 0 && !users_weights) p.noise.max_seconds = std::max(1.0, max_seconds - p.noise.burn_in_seconds);
  return p;
}

RunsAs runs_as(const RunContext& ctx, const Config& proposed) {
  const TuneOptions& opts = ctx.opts;
  // --effective-batch holds ranks × batch_size × grad_accum whatever the strategy proposed.
  Config c = proposed;
  std::string held;
  if (const auto eb = opts.strategy.effective_batch; eb > 0) {
    const std::int64_t b = std::stoll(c.get("batch_size", std::to_string(ctx.workload.default_batch_size)));
    const std::int64_t r = std::stoll(c.get("ranks", "1"));
    const std::string accum = std::to_string(eb / (b * r));
    if (eb % (b * r) == 0 && c.get("grad_accum", "1") != accum) {
      c.set("grad_accum", accum);
      held = fmt::format("grad_accum={} holds --effective-batch {} = {} ranks × batch {} × {}", accum, eb, r, b, accum);
    } else if (eb % (b * r) != 0 && opts.strategy.other_batches && c.get("grad_accum", "1") != "1") {
      // The time objective: a micro-batch that cannot hold the user's batch is a changed batch (answer b), at
      // the smallest global batch it reaches.
      c.set("grad_accum", "1");
      held = fmt::format("grad_accum=1: {} ranks × batch {} cannot hold --effective-batch {}; it trains another global batch, {}",
                         r, b, eb, r * b);
    }
  }
  // Without a listed space, no proposal oversubscribes a CPU host's cores: ranks × threads > cores runs
  // with threads=default, which the worker divides among the ranks (workloads/engine/trainer.cpp).
  if (!opts.user_space && !ctx.target.cuda && c.get("threads", "default") != "default") {
    const std::int64_t r = std::stoll(c.get("ranks", "1")), t = std::stoll(c.get("threads"));
    if (r > 1 && r * t > ctx.target.cpu_cores) {
      c.set("threads", "default");
      held += fmt::format("{}threads=default: {} ranks × {} threads would oversubscribe {} cores (list the knobs with "
                          "--knobs to measure it anyway)",
                          held.empty() ? "" : "; ", r, t, ctx.target.cpu_cores);
    }
  }
  const Resolution res = resolve(c, ctx.workload, ctx.target);
  RunsAs out{res.effective, {}};
  if (res.effective == proposed) return out;
  if (!held.empty()) out.reasons.push_back(held);
  for (const auto& s : res.skipped) out.reasons.push_back(s.reason);
  return out;
}

}  // namespace autotune
