#include "tuner/exec/run_lock.h"
#include "tuner/check/check.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <random>

#include "knobs/did_you_mean.h"
#include "knobs/error.h"
#include "knobs/json_get.h"
#include "knobs/numbers.h"
#include "tuner/exec/interrupt.h"
#include "tuner/measures/journal.h"
#include "tuner/measures/statistics.h"
#include "tuner/exec/trial_runner.h"
#include "tuner/options/tune_options.h"
#include "tuner/exec/worker_client.h"

namespace autotune {

namespace fs = std::filesystem;

namespace {

/// A side ready to run: what it is (for the reports) and the plan every repetition runs.
struct SidePlan {
  CheckSide side;
  TrialPlan plan;
};

/// The winner of a recorded tuning run: its config and workload from best.json, its setup (image size,
/// data, device, seed) from the run's journal when the folder has one.
void apply_recorded_winner(const std::string& path, TrialPlan& plan) {
  const fs::path p(path);
  const fs::path best = fs::is_directory(p) ? p / "best.json" : p;
  if (!fs::is_regular_file(best))
    throw UsageError(fmt::format("{}: no best.json there; give a tune output folder or its best.json", path));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(best.string()));
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("{}: not a readable best.json: {}", best.string(), json_error_text(e)));
  }
  if (j.value("status", std::string()) != "ok" || !j.contains("config") || j["config"].is_null())
    throw UsageError(fmt::format("{}: the run found no stable config, so there is no winner to check", best.string()));
  if (const fs::path journal = best.parent_path() / "journal.sqlite"; fs::exists(journal)) {
    TuneOptions stored;
    options_from_json(nlohmann::json::parse(Journal(journal.string()).meta("options")), stored);
    const MeasureOptions measure = plan.setup.measure;  // both sides are measured alike: the check's own
    plan.setup = stored.setup;
    plan.setup.measure = measure;
  }
  plan.setup.workload = j.at("workload").value("name", plan.setup.workload);
  for (const auto& [k, v] : j.at("config").items()) plan.config.set(k, v.is_string() ? v.get<std::string>() : v.dump());
}

SidePlan side_plan(const std::string& name, const CheckSideSpec& spec, const CheckOptions& o) {
  SidePlan s;
  s.side.name = name;
  s.plan.setup = o.setup;
  std::vector<std::string> what;
  if (!spec.run.empty()) {
    apply_recorded_winner(spec.run, s.plan);
    what.push_back("the winner of " + spec.run);
  }
  if (!spec.model.empty()) {
    s.plan.setup.model = spec.model;
    what.push_back("model " + spec.model);
  }
  if (!spec.trainer.empty()) {  // the two frontends side by side: the same model and knobs in the C++ and the Python worker
    s.plan.setup.trainer = spec.trainer;
    what.push_back(fmt::format("the {} trainer", spec.trainer == "python" ? "Python" : "C++"));
  }
  for (const auto& a : o.set) s.plan.config.set_assignment(a);
  for (const auto& a : spec.set) s.plan.config.set_assignment(a);
  s.side.worker = !spec.worker.empty() ? spec.worker : !o.worker.empty() ? o.worker : default_worker_path(s.plan.setup);
  if (!spec.set.empty()) what.push_back("with " + join(spec.set, " "));
  if (!spec.worker.empty()) what.push_back("worker " + spec.worker);
  s.side.source = what.empty() ? "the shared config" : join(what, ", ");
  s.side.workload = s.plan.setup.workload;
  s.side.config = s.plan.config;
  return s;
}

/// What a side trains, in words: "model m.pt" or "workload mlp".
std::string trains(const TrialSetup& s) { return s.model.empty() ? "workload " + s.workload : "model " + s.model; }

/// A side that is the winner of a recorded run brings that run's model, workload and data. The other side
/// trains the same — taken from the run's record — unless it names its own model (--*-model, an explicit
/// comparison of two model files): a check never measures one side on a model the user did not name (it
/// once measured the built-in mlp against a recorded user model and reported a 94.7% regression). A shared
/// --workload/--model that contradicts the run, or two runs of different models, is a usage error.
void one_model_for_both(SidePlan& a, SidePlan& b, const CheckOptions& o) {
  const bool a_run = !o.a.run.empty(), b_run = !o.b.run.empty();
  if (!a_run && !b_run) return;
  if (a_run && b_run) {
    if (o.a.model.empty() && o.b.model.empty() &&
        (a.plan.setup.model != b.plan.setup.model || a.plan.setup.workload != b.plan.setup.workload))
      throw UsageError(fmt::format("--baseline-run {} trains {} and --candidate-run {} trains {}: a check compares one model "
                                   "(name both files with --baseline-model/--candidate-model to compare two on purpose)",
                                   o.a.run, trains(a.plan.setup), o.b.run, trains(b.plan.setup)));
    return;
  }
  const SidePlan& from = a_run ? a : b;
  SidePlan& other = a_run ? b : a;
  const CheckSideSpec& other_spec = a_run ? o.b : o.a;
  if (!other_spec.model.empty()) return;  // the user's explicit comparison
  const TrialSetup shared = o.setup;
  const bool shared_named = !shared.model.empty() || !shared.plugin.empty() || shared.workload != TrialSetup{}.workload;
  if (shared_named && (shared.model != from.plan.setup.model || shared.workload != from.plan.setup.workload))
    throw UsageError(fmt::format("{} trains {}, but this check names {}: a check compares one model (drop --workload/--model to "
                                 "take the run's, or give --{}-model to compare another on purpose)",
                                 a_run ? "--baseline-run " + o.a.run : "--candidate-run " + o.b.run, trains(from.plan.setup),
                                 trains(shared), a_run ? "candidate" : "baseline"));
  const MeasureOptions measure = other.plan.setup.measure;  // both sides are measured alike: the check's own
  other.plan.setup = from.plan.setup;
  other.plan.setup.measure = measure;
  other.side.workload = other.plan.setup.workload;
  other.side.source += fmt::format(" ({} and its data from {})", trains(from.plan.setup), a_run ? o.a.run : o.b.run);
}

/// The busy-host limit a repetition is judged by: --max-host-load when given, else the default.
StabilityOptions host_limit(const CheckOptions& o) {
  StabilityOptions limit;
  if (o.max_host_load >= 0) limit.max_host_load = o.max_host_load;
  return limit;
}

CheckRep rep_of(const TrialRecord& rec, int index, int order, const std::string& dir, const StabilityOptions& limit) {
  CheckRep r;
  r.index = index;
  r.order = order;
  r.status = to_string(rec.result.status);
  r.message = rec.result.message;
  r.windows = rec.result.throughputs();
  r.throughput = rec.result.status == TrialStatus::ok ? median(r.windows) : 0;
  r.peak_bytes =
      static_cast<double>(rec.result.peak_device_bytes >= 0 ? rec.result.peak_device_bytes : rec.result.peak_rss_bytes);
  r.trial_dir = dir;
  if (rec.result.host_load) {
    r.other_cores = rec.result.host_load->other_cores;
    r.cpus = rec.result.host_load->cpus;
    r.busy = host_busy(rec.result, limit);
  }
  return r;
}

/// "" when both sides saw the same contention; else why a verdict between them would be the other programs'.
std::string contention_differs(const CheckSide& a, const CheckSide& b, const StabilityOptions& limit) {
  int busy_a = 0, busy_b = 0, cpus = 0;
  double most = 0;
  for (const CheckSide* s : {&a, &b})
    for (const auto& r : s->reps) {
      if (!r.busy) continue;
      (s == &a ? busy_a : busy_b) += 1;
      if (r.other_cores > most) most = r.other_cores, cpus = r.cpus;
    }
  if (busy_a == busy_b) return "";
  return fmt::format("the sides saw different contention: other programs used up to {:.2f} of {} CPUs during {} of A's and {} of "
                     "B's repetitions (limit: {:g}% of their CPUs, at least {:g}); run it again on a quiet host",
                     most, cpus, busy_a, busy_b, 100 * limit.max_host_load, limit.min_busy_cores);
}

/// Runs both sides' repetitions interleaved: for each round, A then B or B then A, drawn from the seed.
void run_interleaved(std::vector<SidePlan*> sides, const CheckOptions& o, const std::string& out, CheckSummary& s,
                     std::ostream& progress) {
  std::mt19937_64 rng(o.order_seed);
  for (int i = 0; i < o.reps; ++i) {
    const bool a_first = rng() & 1;
    std::vector<SidePlan*> round = sides;
    if (round.size() == 2 && !a_first) std::swap(round[0], round[1]);
    for (SidePlan* sp : round) {
      const int seq = static_cast<int>(s.order.size()) + 1;
      TrialRunner runner(
          RunnerOptions(sp->side.worker, (fs::path(out) / "trials").string()).timeout_seconds(o.trial_timeout_seconds).launcher(o.launcher));
      const TrialRecord rec = runner.run(sp->plan, TrialKind::confirm, seq);  // throws Interrupted on Ctrl-C
      s.order += sp->side.name;  // only repetitions that finished
      const CheckRep rep = rep_of(rec, static_cast<int>(sp->side.reps.size()) + 1, seq, fmt::format("trials/{:04d}", seq), host_limit(o));
      sp->side.reps.push_back(rep);
      progress << fmt::format("[{:>3}/{}] {} rep {:>2}/{}: {}\n", seq, o.reps * static_cast<int>(sides.size()), sp->side.name,
                              rep.index, o.reps,
                              rep.status == "ok" ? with_commas(rep.throughput) + " samples/s" : rep.status + ": " + rep.message)
               << std::flush;
    }
  }
}

/// The first repetition of a side that did not finish fine, as the check's reason; "" when all did.
std::string side_failure(const CheckSide& side) {
  if (side.reps.empty()) return fmt::format("side {} has no repetitions", side.name);
  for (const auto& r : side.reps)
    if (r.status != "ok")
      return fmt::format("side {} repetition {} ({}): {}{}", side.name, r.index, r.trial_dir.empty() ? "stored" : r.trial_dir,
                         r.status, r.message.empty() ? "" : ": " + r.message);
  return "";
}

std::vector<MetricSample> samples_of(const CheckSide& a, const CheckSide& b) {
  MetricSample t{"throughput", "samples/s", true, {}, {}}, m{"peak_memory", "bytes", false, {}, {}};
  for (const auto& r : a.reps) t.a.push_back(r.throughput), m.a.push_back(r.peak_bytes);
  for (const auto& r : b.reps) t.b.push_back(r.throughput), m.b.push_back(r.peak_bytes);
  std::vector<MetricSample> out = {t};
  const bool memory_known = std::all_of(m.a.begin(), m.a.end(), [](double x) { return x > 0; }) &&
                            std::all_of(m.b.begin(), m.b.end(), [](double x) { return x > 0; });
  if (memory_known) out.push_back(m);
  return out;
}

/// The decision and the check's one-line verdict.
void decide_check(CheckSummary& s, const GateOptions& g) {
  const GateDecision d = decide(samples_of(s.a, s.b), g);
  s.metrics = d.metrics;
  s.verdict = d.verdict;
  for (const char* v : {"regression", "inconclusive", "pass"})
    for (const auto& m : s.metrics)
      if (s.reason.empty() && m.verdict == v) s.reason = fmt::format("{}: {}", m.name, m.reason);
}

std::string default_check_dir() {
  const std::string ts = utc_now_iso8601();  // 2026-11-23T13:45:07Z
  std::string compact;
  for (char c : ts)
    if (c != '-' && c != ':' && c != 'Z') compact += c == 'T' ? '-' : c;
  return "checks/" + compact;
}

}  // namespace

std::string fingerprint_mismatch(const CheckSide& stored, const EnvFingerprint& here, const Config& config) {
  std::vector<std::string> diffs;
  auto differ = [&](const char* what, const std::string& then, const std::string& now) {
    if (then != now) diffs.push_back(fmt::format("{} '{}' vs '{}' here", what, then, now));
  };
  const EnvFingerprint& e = stored.env;
  differ("CPU model", e.cpu_model.empty() ? e.device_name : e.cpu_model,
         here.cpu_model.empty() ? here.device_name : here.cpu_model);
  differ("device", e.device_name, here.device_name);
  differ("GPU count", std::to_string(e.cuda_available ? e.device_count : 0),
         std::to_string(here.cuda_available ? here.device_count : 0));
  differ("driver", e.driver, here.driver);
  differ("CUDA", e.cuda_compiled, here.cuda_compiled);
  differ("torch", e.torch_version, here.torch_version);
  differ("config", stored.config.key(), config.key());
  return join(diffs, "; ");
}

namespace {

/// --baseline-stored: the candidate side of an earlier check stands in for A. Returns what makes it not comparable
/// with B here (another machine, config or workload; "" when it is).
std::string use_stored_side(SidePlan& a, const SidePlan& b, const CheckOptions& o) {
  std::string mismatch;
  CheckSummary before;
  try {
    before = nlohmann::json::parse(read_file(o.a.stored)).get<CheckSummary>();
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("--baseline-stored {}: not a readable check.json: {}", o.a.stored, json_error_text(e)));
  }
  const std::string source = "stored in " + o.a.stored;
  a.side = before.b;
  a.side.name = "A";
  a.side.stored = true;
  a.side.source = source;
  mismatch = fingerprint_mismatch(a.side, query_environment(b.side.worker), side_plan("A", o.a, o).plan.config);
  if (a.side.workload != b.side.workload || a.side.model != b.side.model)
    mismatch += (mismatch.empty() ? "" : "; ") + fmt::format("workload '{}' vs '{}'",
                                                             a.side.model.empty() ? a.side.workload : a.side.model,
                                                             b.side.model.empty() ? b.side.workload : b.side.model);
  return mismatch;
}

}  // namespace

CheckSummary run_check(const CheckOptions& o, std::ostream& progress) {
  const auto t0 = std::chrono::steady_clock::now();
  if (o.reps < 1) throw UsageError(fmt::format("--reps {} must be ≥ 1", o.reps));
  const std::string out = o.out_dir.empty() ? default_check_dir() : o.out_dir;
  if (fs::exists(out) && !fs::is_directory(out))
    throw UsageError(fmt::format("--out {}: is a file; a check writes a folder", out));
  if (fs::exists(out) && !fs::is_empty(out))
    throw UsageError(fmt::format("{} already exists and is not empty; choose another --out (nothing is overwritten)", out));
  SidePlan a = side_plan("A", o.a, o), b = side_plan("B", o.b, o);
  one_model_for_both(a, b, o);
  // One built-in workload on both sides; a --*-model side is the user's explicit comparison (two model
  // files, or a model against the built-in it re-implements).
  if (a.plan.setup.model.empty() && b.plan.setup.model.empty() && a.plan.setup.workload != b.plan.setup.workload)
    throw UsageError(fmt::format("side A trains {} and side B trains {}: a check compares one workload (or a --*-model file)",
                                 a.plan.setup.workload, b.plan.setup.workload));
  for (SidePlan* sp : {&a, &b}) {
    const WorkloadInfo w = describe_workload(sp->side.worker, sp->plan.setup);
    data_kind_for(w, sp->plan.setup);
    sp->side.workload = w.name;
    sp->side.model = w.source;
    sp->side.default_batch = static_cast<int>(w.default_batch_size);
  }
  CheckSummary s;
  s.reps = o.reps;
  s.order_seed = o.order_seed;
  s.alpha = o.gate.alpha;
  s.floor = o.gate.floor;
  s.memory_floor = o.gate.memory_floor;
  s.min_reps = o.gate.min_reps;
  s.started_at = utc_now_iso8601();
  fs::create_directories(fs::path(out) / "trials");
  const RunLock lock(out, "check");  // a second check on this folder is refused while this one runs
  const std::string mismatch = o.a.stored.empty() ? "" : use_stored_side(a, b, o);
  for (SidePlan* sp : {&a, &b})
    if (!sp->side.stored) sp->side.env = query_environment(sp->side.worker);  // the machine as this side's worker sees it
  std::vector<SidePlan*> to_run = {&a, &b};
  if (a.side.stored) to_run = {&b};
  try {
    run_interleaved(to_run, o, out, s, progress);
  } catch (const Interrupted& e) {  // the running worker is stopped; what finished is reported, undecided
    s.interrupted_by = e.signal;
  }
  s.a = a.side;
  s.b = b.side;
  if (s.interrupted_by) {
    const int want = o.reps * static_cast<int>(to_run.size());
    s.verdict = "interrupted";
    s.reason = fmt::format(
        "interrupted by SIG{} after {} of {} repetitions; undecided (a check is not resumed: run it again)",
        sigabbrev_np(s.interrupted_by) ? sigabbrev_np(s.interrupted_by) : "?", s.order.size(),
        want);
  } else if (const std::string f = side_failure(s.a).empty() ? side_failure(s.b) : side_failure(s.a); !f.empty()) {
    s.verdict = "failed";
    s.reason = f;
  } else if (!mismatch.empty()) {
    s.verdict = "inconclusive";
    s.reason = "no comparable baseline: the stored side ran elsewhere or with another config (" + mismatch + ")";
  } else if (const std::string c = contention_differs(s.a, s.b, host_limit(o)); !c.empty()) {
    decide_check(s, o.gate);  // the metrics as measured, for the report; the verdict is not theirs to give
    s.verdict = "inconclusive";
    s.reason = c;
  } else {
    decide_check(s, o.gate);
  }
  s.finished_at = utc_now_iso8601();
  s.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  s.out_dir = out;
  return s;
}

int check_exit_status(const CheckSummary& s, bool inconclusive_passes) {
  if (s.interrupted_by) return 128 + s.interrupted_by;
  if (s.verdict == "pass") return 0;
  if (s.verdict == "regression") return 1;
  if (s.verdict == "failed") return 3;
  return inconclusive_passes ? 0 : 4;
}

}  // namespace autotune
