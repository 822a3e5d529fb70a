// autotune memory: what each config needs in device memory and the largest batch that fits, from a few
// probes per family, without running the search (tuner/memory/model.h, docs/memory.md). --check runs
// each listed batch too (the same short probe, never fed to the fit) and prints the error.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <unistd.h>

#include "knobs/error.h"
#include "knobs/memory.h"
#include "knobs/resolve.h"
#include "knobs/target.h"
#include "reports/markdown.h"
#include "tuner/commands/command.h"
#include "tuner/memory/model.h"
#include "tuner/memory/probes.h"
#include "tuner/statistics.h"
#include "tuner/exec/trial_runner.h"
#include "tuner/worker_client.h"

namespace autotune::cli {

namespace {

namespace fs = std::filesystem;

struct MemoryArgs {
  TrialFlags trial;
  std::vector<std::string> knobs;
  std::vector<std::int64_t> batches;
  std::int64_t probe_smallest = 0;
  double margin_pct = 5;
  bool check = false;
  std::string json_path, keep_dir;
};

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string pct(double x) { return fmt::format("{:+.1f}%", 100 * x); }

int run(const MemoryArgs& a, std::ostream& o) {
  TrialSetup setup = a.trial.resolved_setup();
  const std::string worker = a.trial.worker_path();
  const WorkloadInfo workload = describe_workload(worker, setup);
  const EnvFingerprint env = query_environment(worker);
  const TargetInfo target = make_target(workload, env, setup);
  if (setup.memory_cap.empty() && !target.cuda)
    throw UsageError("a CPU host has no device memory to predict against: give --memory-cap SIZE, the size of the device to emulate (e.g. --memory-cap 2G)");
  for (std::int64_t b : a.batches)
    if (b < 1 || b > (1 << 20)) throw UsageError(fmt::format("--batch-sizes {}: out of range; allowed: 1..1048576", b));
  if (!(a.margin_pct >= 0 && a.margin_pct < 100))
    throw UsageError(fmt::format("--margin {}: out of range; allowed: 0 ≤ margin < 100 (%)", a.margin_pct));

  // The configs: the grid of --knobs (batch_size comes from --batch-sizes), each as it would run here.
  KnobSpace space;
  for (const auto& k : a.knobs) space.add_assignment(k);
  for (const auto& [k, vs] : space.axes())
    if (k == "batch_size") throw UsageError("--knobs batch_size: give the batches with --batch-sizes (the model predicts every batch)");
  std::vector<Config> configs;
  std::set<std::string> seen_families;
  std::map<std::string, std::string> defaults;
  defaults["batch_size"] = std::to_string(workload.default_batch_size);
  MemoryModelOptions mo;
  mo.margin = a.margin_pct / 100;
  mo.capacity_bytes = setup.memory_cap.empty() ? 0 : parse_size(setup.memory_cap, "--memory-cap");
  MemoryModel model(mo, defaults);
  for (const Config& c : space.empty() ? std::vector<Config>{Config{}} : space.grid()) {
    Config eff = resolve(c, workload, target).effective;
    eff.erase("batch_size");
    if (seen_families.insert(memory_family(eff, defaults)).second) configs.push_back(eff);
  }
  std::vector<std::int64_t> batches = a.batches;
  if (batches.empty())
    for (std::int64_t b = 1; b <= 4 * std::max<std::int64_t>(64, workload.default_batch_size); b *= 2) batches.push_back(b);
  std::sort(batches.begin(), batches.end());
  const std::int64_t smallest = a.probe_smallest > 0 ? a.probe_smallest : std::max<std::int64_t>(4, workload.default_batch_size / 4);

  const bool temp = a.keep_dir.empty();
  const fs::path dir = temp ? fs::temp_directory_path() / fmt::format("autotune-memory-{}", ::getpid()) : fs::path(a.keep_dir);
  TrialRunner runner(RunnerOptions(worker, dir.string()).timeout_seconds(a.trial.trial_timeout));
  std::deque<TrialRecord> records;
  int n = 0;
  const auto run_plan = [&](const TrialPlan& p) -> const TrialRecord& {
    records.push_back(runner.run(p, TrialKind::memory, ++n));
    records.back().id = n;
    return records.back();
  };

  o << fmt::format("memory model of {} on {} ({}; margin {:.0f}%)\n", workload.name, target.cuda ? "cuda" : "cpu",
                   setup.memory_cap.empty() ? "the device's own memory"
                                            : fmt::format("--memory-cap {}{}", format_bytes(mo.capacity_bytes),
                                                          target.cuda ? ", the caching allocator's memory fraction"
                                                                      : ": a counting CPU allocator emulates a device of that size"),
                   a.margin_pct);
  nlohmann::json out = {{"workload", workload.name}, {"device", target.cuda ? "cuda" : "cpu"}, {"margin", mo.margin}, {"families", nlohmann::json::array()}};
  std::vector<double> held_out_errors;
  double worst_under = 0;
  for (const Config& c : configs) {
    const double t0 = now_s();
    const int probes = probe_family(model, c, setup, smallest, run_plan);
    const double probe_s = now_s() - t0;
    std::set<std::int64_t> probed;
    for (std::int64_t b : probe_batches(smallest)) probed.insert(b);
    Config c1 = c;
    c1.set("batch_size", std::to_string(*probed.begin()));
    const MemoryPrediction p1 = model.predict(c1);
    o << fmt::format("\nfamily {}: {} probe{} at batch {} ({:.1f} s)\n", memory_family(c, defaults), probes, probes == 1 ? "" : "s",
                     fmt::format("{}", fmt::join(probed, ", ")), probe_s);
    nlohmann::json fam = {{"family", memory_family(c, defaults)}, {"probes", std::vector<std::int64_t>(probed.begin(), probed.end())},
                          {"probe_seconds", probe_s}, {"rows", nlohmann::json::array()}};
    if (!p1.known && p1.points == 0) {
      o << "  not predicted: " << p1.why_unknown << "\n";
      fam["why_unknown"] = p1.why_unknown;
      out["families"].push_back(fam);
      continue;
    }
    for (const auto& sc : model.states_checks())
      if (sc.family == memory_family(c, defaults)) {
        o << fmt::format("  model states  {} computed, {} counted from the tensors{} (params {}, grads {}, AdamW state {}{})\n",
                         format_bytes(sc.analytic), format_bytes(sc.counted), sc.analytic == sc.counted ? " — equal" : " — DIFFERENT",
                         format_bytes(p1.states.params), format_bytes(p1.states.grads), format_bytes(p1.states.optimizer),
                         p1.states.buckets ? ", DDP buckets " + format_bytes(p1.states.buckets) : "");
        fam["states_analytic"] = sc.analytic;
        fam["states_counted"] = sc.counted;
      }
    if (p1.points > 0) {
      MemoryPrediction p0 = p1;  // the lines at batch 0: intercepts
      p0.activations -= p1.per_sample * p1.batch;
      Config c2 = c;
      c2.set("batch_size", std::to_string(2 * p1.batch));
      p0.optimizer_transient -= model.predict(c2).optimizer_transient - p1.optimizer_transient;
      o << fmt::format("  activations   {} + {} per sample (forward+backward, above the states); optimizer step {} above the "
                       "states; fit over {} points, largest miss {:.2f}%\n",
                       format_bytes(p0.activations), format_bytes(p1.per_sample), format_bytes(p0.optimizer_transient), p1.points,
                       100 * p1.fit_error);
      fam["per_sample"] = p1.per_sample;
      fam["activations_intercept"] = p0.activations;
      fam["optimizer_transient"] = p0.optimizer_transient;
      fam["fit_error"] = p1.fit_error;
    }
    o << fmt::format("  {:>7}  {:>30}  {:<16}  {:<4}{}\n", "batch", "predicted peak [interval]", "peak in", "fits",
                     a.check ? "  measured       error" : "");
    for (std::int64_t b : batches) {
      Config cb = c;
      cb.set("batch_size", std::to_string(b));
      const MemoryPrediction p = model.predict(cb);
      nlohmann::json row = {{"batch", b}, {"known", p.known}, {"held_out", !probed.count(b)}};
      std::string line;
      if (p.known)
        line = fmt::format("  {:>7}  {:>30}  {:<16}  {:<4}", b,
                           fmt::format("{} [{}, {}]", format_bytes(p.peak), format_bytes(p.lo), format_bytes(p.hi)), p.phase,
                           p.fits ? "yes" : "no");
      else line = fmt::format("  {:>7}  {:>30}  {:<16}  {:<4}", b, "unknown", "", "?");
      if (p.known) {
        row["predicted"] = p.peak;
        row["lo"] = p.lo;
        row["hi"] = p.hi;
        row["phase"] = p.phase;
        row["fits"] = p.fits;
      } else {
        row["why_unknown"] = p.why_unknown;
      }
      if (a.check) {
        TrialPlan check = memory_probe_plan(setup, cb, b);  // measured under the cap, never added to the fit
        check.setup.memory_cap = setup.memory_cap;
        const TrialRecord& r = run_plan(check);
        row["status"] = to_string(r.result.status);
        if (r.result.status == TrialStatus::ok && r.result.memory) {
          const std::int64_t meas = r.result.memory->peak();
          row["measured"] = meas;
          if (p.known) {
            const double err = static_cast<double>(p.peak - meas) / static_cast<double>(meas);
            row["error"] = err;
            if (!probed.count(b)) {
              held_out_errors.push_back(std::abs(err));
              if (meas > p.hi) worst_under = std::max(worst_under, static_cast<double>(meas - p.hi) / static_cast<double>(meas));
            }
            line += fmt::format("  {:<13}  {}{}", format_bytes(meas), pct(err), probed.count(b) ? " (probed)" : "");
          } else {
            line += fmt::format("  {}", format_bytes(meas));
          }
        } else {
          line += fmt::format("  {}", to_string(r.result.status) == "oom" ? "out of memory" : to_string(r.result.status));
          if (r.result.status == TrialStatus::oom && p.known && p.fits) line += "  MISS: predicted to fit";
        }
      }
      if (!p.known) line += "  (" + p.why_unknown + ")";
      o << line << "\n";
      fam["rows"].push_back(row);
    }
    const std::int64_t pow2 = model.largest_fitting(c, {}, 1 << 20);
    std::int64_t exact = 0;
    if (pow2 > 0) {  // the largest integer batch predicted to fit: between pow2 and 2·pow2
      std::int64_t lo = pow2, hi = 2 * pow2;
      while (hi - lo > 1) {
        const std::int64_t mid = (lo + hi) / 2;
        Config cm = c;
        cm.set("batch_size", std::to_string(mid));
        (model.predict(cm).fits ? lo : hi) = mid;
      }
      exact = lo;
    }
    fam["largest_fit"] = exact;
    fam["largest_fit_pow2"] = pow2;
    if (pow2 > 0)
      o << fmt::format("  largest batch predicted to fit: {} (power of two: {})\n", with_commas(static_cast<double>(exact)), pow2);
    else if (pow2 == 0) {
      const std::string advice = model.cannot_fit_advice(c);
      o << "  " << (advice.empty() ? "no batch is predicted to fit" : advice) << "\n";
      fam["advice"] = advice;
    }
    out["families"].push_back(fam);
  }
  for (const auto& m : model.misses()) o << "miss: " << m.what << "\n";
  if (!held_out_errors.empty()) {
    const double med = median(held_out_errors);
    const double mx = *std::max_element(held_out_errors.begin(), held_out_errors.end());
    o << fmt::format("\nheld-out batches (not probed): {} measured, median |error| {:.2f}%, max {:.2f}%; largest under-prediction "
                     "beyond the interval {:.2f}% (margin {:.0f}%)\n",
                     held_out_errors.size(), 100 * med, 100 * mx, 100 * worst_under, a.margin_pct);
    out["held_out"] = {{"n", held_out_errors.size()}, {"median_abs_error", med}, {"max_abs_error", mx}, {"worst_under", worst_under}};
  }
  out["capacity"] = model.options().capacity_bytes;
  out["trials"] = n;
  if (!a.json_path.empty()) {
    std::ofstream f(a.json_path);
    f << out.dump(2) << "\n";
    if (!f) throw std::runtime_error(a.json_path + ": cannot write");
  }
  if (temp) fs::remove_all(dir);
  return 0;
}

}  // namespace

Command memory_command() {
  auto a = std::make_shared<MemoryArgs>();
  return {"memory", "predict each config's peak device memory and the largest batch that fits, from a few probes (no search)",
          [a](CLI::App* c) {
            a->trial.add_to(c);
            c->add_option("--knobs", a->knobs, "configs, e.g. --knobs precision=fp32,amp_bf16 checkpointing=none,blocks (one family each)");
            c->add_option("--batch-sizes", a->batches, "batches to predict (default: powers of two to 4 × the workload's)")->delimiter(',');
            c->add_option("--probe-batch", a->probe_smallest,
                          "probes run at batch P/4, P/2 and P (default: P = a quarter of the workload's batch, at least 4)");
            c->add_option("--margin", a->margin_pct, "fits: the upper prediction stays this many % below the capacity")->capture_default_str();
            c->add_flag("--check", a->check, "also measure every listed batch (a probe each, not used by the fit) and print the error");
            c->add_option("--json", a->json_path, "write the predictions (and measurements) to this file");
            c->add_option("--out", a->keep_dir, "keep each probe's plan.json/result.json in this folder (default: a temporary one)");
          },
          [a](std::ostream& o) { return run(*a, o); }};
}

}  // namespace autotune::cli
