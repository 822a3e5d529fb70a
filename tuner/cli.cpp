#include "tuner/cli.h"

#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>

#include "knobs/did_you_mean.h"
#include "knobs/error.h"
#include "knobs/knob.h"
#include "reports/markdown.h"
#include "reports/reporter.h"
#include "tuner/space_file.h"
#include "tuner/statistics.h"
#include "tuner/strategy.h"
#include "tuner/summarize.h"
#include "tuner/trial_runner.h"
#include "tuner/tune.h"
#include "tuner/worker_client.h"
#include "data/cache_file.h"

namespace autotune {

namespace fs = std::filesystem;

namespace {

/// Options shared by the commands that run trials.
struct RunFlags {
  std::string workload = "mlp";
  std::string device = "auto";
  std::string worker;
  std::uint64_t seed = 0;
  std::int64_t image_size = 0;
  int windows = 3;
  double window_seconds = 1.0;
  std::string data, data_cache;
  double max_bad_share = 0.01;
  double trial_timeout = 600;

  void add_to(CLI::App* app) {
    app->add_option("--workload,-w", workload, "workload to train (see `autotune workloads`)")->capture_default_str();
    app->add_option("--device", device, "auto | cpu | cuda")
        ->capture_default_str()
        ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
    app->add_option("--seed", seed, "seed for weights and data")->capture_default_str();
    app->add_option("--image-size", image_size, "image workloads: input side in pixels (default: the workload's, 224)")
        ->check(CLI::Range(32, 4096));
    app->add_option("--windows", windows, "measured windows per trial (≥ 3)")->capture_default_str()->check(CLI::Range(3, 1000));
    app->add_option("--window-seconds", window_seconds, "minimum length of a window")
        ->capture_default_str()
        ->check(CLI::Range(0.05, 600.0));
    app->add_option("--trial-timeout", trial_timeout, "seconds before a trial is stopped")
        ->capture_default_str()
        ->check(CLI::Range(1.0, 86400.0));
    app->add_option("--worker", worker, "autotune-worker binary (default: next to autotune, or $AUTOTUNE_WORKER)");
    app->add_option("--data", data, "real data: an image folder (resnet; DIR/<class>/<image>.jpg) or a uint16 token .bin (gpt)");
    app->add_option("--cache", data_cache,
                    "image workloads: a pre-decoded cache of --data (autotune prepare-data), for decode=cache");
    app->add_option("--max-bad-share", max_bad_share, "fail a trial when more than this share of images is bad")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 1.0));
  }
  /// One trial of `set_args` (knob=value) with these flags.
  TrialPlan plan(const std::vector<std::string>& set_args) const {
    TrialPlan p;
    p.workload = workload;
    for (const auto& s : set_args) p.config.set_assignment(s);
    p.device = device;
    p.seed = seed;
    p.image_size = image_size;
    p.data = abs(data);
    p.data_cache = abs(data_cache);
    p.max_bad_share = max_bad_share;
    p.measure = measure();
    return p;
  }
  /// Usage errors before anything runs: an unknown workload, a --data it cannot read.
  static void check_plan(const TrialPlan& p, const std::string& worker) {
    data_kind_for(find_workload(query_workloads(worker), p.workload), p.data, p.data_cache);
  }
  /// Absolute paths: the worker runs in its own trial folder.
  std::string abs(const std::string& p) const { return p.empty() ? p : fs::absolute(p).lexically_normal().string(); }
  MeasureOptions measure() const {
    MeasureOptions m;
    m.windows = windows;
    m.window_min_seconds = window_seconds;
    return m;
  }
  std::string worker_path() const { return worker.empty() ? default_worker_path() : worker; }
};

struct Command {
  std::string name, help;
  std::function<void(CLI::App*)> setup;
  std::function<int(std::ostream&)> run;
};

/// --summary: appends report.md (cut to GitHub's 1 MiB job-summary limit) to $GITHUB_STEP_SUMMARY.
void write_step_summary(const RunSummary& s, std::ostream& o) {
  const char* path = std::getenv("GITHUB_STEP_SUMMARY");
  if (!path || !*path) {
    o << "--summary: GITHUB_STEP_SUMMARY is not set (not a GitHub Actions step); nothing written\n";
    return;
  }
  const std::string md = render_markdown(s, 1000 * 1000);
  std::FILE* f = std::fopen(path, "a");
  if (!f)
    throw std::runtime_error(fmt::format("--summary: cannot append to GITHUB_STEP_SUMMARY={}: {}", path, std::strerror(errno)));
  const bool ok = std::fwrite(md.data(), 1, md.size(), f) == md.size();
  if (std::fclose(f) != 0 || !ok) throw std::runtime_error(fmt::format("--summary: writing {} failed", path));
  o << fmt::format("job summary:    {} ({} bytes appended)\n", path, md.size());
}

void print_outputs(const std::vector<std::string>& paths, std::ostream& o) {
  for (const auto& p : paths) {
    const std::string name = fs::path(p).filename().string() + ":";
    o << fmt::format("{:<16}{}\n", name, p);
  }
}

std::string fmt_bytes(std::int64_t b) { return fmt::format("{:.0f} MiB", static_cast<double>(b) / (1 << 20)); }

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{"autotune: finds the fastest stable way to train a LibTorch model on this machine"};
  app.name("autotune");
  app.require_subcommand(1);

  RunFlags rf;
  // tune
  std::vector<std::string> knob_args;
  std::string budget = "10m", out_dir, resume_dir, space_file, strategy = "grid";
  int max_trials = 0, confirm_top = 2;
  std::int64_t effective_batch = 0;
  // trial
  std::vector<std::string> set_args;
  bool json_out = false;
  bool step_summary = false;
  std::string report_dir;
  data::PrepareOptions prep;
  std::string trace_path;
  int trace_steps = 5;
  bool force = false;

  std::vector<Command> commands = {
      {"tune",
       "search knob settings, one worker process per trial; writes journal.sqlite, best.json, report.md, report.html, results.json, junit.xml",
       [&](CLI::App* c) {
         rf.add_to(c);
         c->add_option("--knobs", knob_args,
                       "search space, e.g. --knobs batch_size=32,64 threads=1,2 (default: the embedded space)");
         c->add_option("--budget", budget, "time budget: seconds or 90s, 10m, 1h30m")->capture_default_str();
         c->add_option("--out", out_dir, "output folder (default runs/<UTC timestamp>)");
         c->add_option("--resume", resume_dir, "continue the run in this folder (its journal fixes workload and space)");
         c->add_option("--space", space_file, "search space from a YAML/JSON file (knobs:, optionally workload:, strategy:)");
         c->add_option("--strategy", strategy, "grid | random | coordinate | halving | auto")->capture_default_str();
         c->add_option("--max-trials", max_trials, "random: configs to sample (default: a third of the grid, at least 4)")
             ->check(CLI::Range(1, 100000));
         c->add_option("--effective-batch", effective_batch,
                       "hold batch_size × grad_accum at N (batch-size search varies the micro-batch)")
             ->check(CLI::Range(1, 1 << 24));
         c->add_option("--confirm-top", confirm_top, "candidates re-run at the end, interleaved")
             ->capture_default_str()
             ->check(CLI::Range(1, 10));
         c->add_flag("--summary", step_summary, "also append report.md to $GITHUB_STEP_SUMMARY (GitHub Actions job summary)");
       },
       [&](std::ostream& o) {
         TuneOptions t;
         t.workload = rf.workload;
         t.device = rf.device;
         t.seed = rf.seed;
         t.image_size = rf.image_size;
         t.data = rf.abs(rf.data);
         t.data_cache = rf.abs(rf.data_cache);
         t.max_bad_share = rf.max_bad_share;
         t.measure = rf.measure();
         t.trial_timeout_seconds = rf.trial_timeout;
         t.worker = rf.worker_path();
         t.budget_seconds = parse_duration(budget);
         if (!space_file.empty()) {
           if (!knob_args.empty()) throw UsageError("give the search space once: --knobs or --space FILE, not both");
           const SpaceFile f = read_space_file(space_file);
           t.space = f.space;
           if (f.workload && t.workload == "mlp" && rf.workload == "mlp") t.workload = *f.workload;
           if (f.strategy && strategy == "grid") strategy = *f.strategy;
         }
         for (const auto& k : knob_args) t.space.add_assignment(k);
         t.strategy.name = strategy;
         t.strategy.seed = rf.seed;
         t.strategy.max_trials = max_trials;
         t.strategy.effective_batch = effective_batch;
         t.confirm_top = confirm_top;
         make_strategy(t.strategy, KnobSpace(), Config(), {});  // unknown strategy: usage error up front
         if (effective_batch > 0)
           for (const auto& [k, vs] : t.space.axes())
             if (k == "grad_accum")
               throw UsageError("--effective-batch sets grad_accum itself; remove grad_accum from the space");
         if (!resume_dir.empty()) {
           if (!out_dir.empty() && out_dir != resume_dir)
             throw UsageError("--resume DIR and --out DIR name different folders; give one");
           if (!knob_args.empty()) throw UsageError("--knobs cannot change a resumed run: its journal fixes the search space");
           t.resume = true;
           t.out_dir = resume_dir;
         } else {
           t.out_dir = out_dir;
         }
         o << fmt::format("autotune tune: workload {}, strategy {}, budget {}\n", t.workload, t.strategy.name, budget)
           << std::flush;
         const TuneOutcome r = run_tune(t, o);
         o << "\n";
         if (r.summary.winner >= 0) {
           const auto& w = r.summary.configs[r.summary.winner];
           o << fmt::format("winner: {} — {} samples/s", w.config.key(), with_commas(w.median));
           if (r.summary.speedup > 0) o << fmt::format(", {:.2f}× the baseline", r.summary.speedup);
           o << "\n";
         } else {
           o << "no stable config: see the report for why each was rejected\n";
         }
         print_outputs({r.best_json_path, r.report_md_path, (fs::path(r.out_dir) / "report.html").string(),
                        (fs::path(r.out_dir) / "results.json").string(), (fs::path(r.out_dir) / "junit.xml").string(),
                        r.journal_path},
                       o);
         if (step_summary) write_step_summary(r.summary, o);
         return r.summary.winner >= 0 ? 0 : 1;
       }},
      {"trial", "run one config in a fresh worker process and print its measurement",
       [&](CLI::App* c) {
         rf.add_to(c);
         c->add_option("--set", set_args, "knob=value (repeatable), e.g. --set batch_size=64");
         c->add_option("--out", out_dir, "keep plan.json/result.json/stderr.log in this folder (default: a temporary one)");
         c->add_flag("--json", json_out, "print result.json");
       },
       [&](std::ostream& o) {
         const TrialPlan plan = rf.plan(set_args);
         const std::string worker = rf.worker_path();
         rf.check_plan(plan, worker);
         const bool temp = out_dir.empty();
         const fs::path dir = temp ? fs::temp_directory_path() / fmt::format("autotune-trial-{}", ::getpid()) : fs::path(out_dir);
         TrialRunner runner(RunnerOptions(worker, dir.string()).timeout_seconds(rf.trial_timeout));
         const TrialRecord rec = runner.run(plan, TrialKind::search, 1);
         if (temp) fs::remove_all(dir);
         const TrialResult& r = rec.result;
         if (json_out) {
           o << nlohmann::json(r).dump(2) << "\n";
           return r.status == TrialStatus::ok ? 0 : 1;
         }
         o << fmt::format("{} {} on {}: {}\n", r.workload, plan.config.key(), r.device.empty() ? "?" : r.device,
                          to_string(r.status));
         if (r.status != TrialStatus::ok) {
           o << "  " << r.message << "\n";
           return 1;
         }
         const auto t = r.throughputs();
         const Interval ci = bootstrap_median_ci(t);
         std::string ws;
         for (double v : t) ws += (ws.empty() ? "" : ", ") + with_commas(v);
         o << fmt::format("  throughput  {} samples/s median (95% CI {}–{}), IQR/median {:.1f}%\n", with_commas(median(t)),
                          with_commas(ci.lo), with_commas(ci.hi), 100 * relative_iqr(t));
         o << fmt::format("  windows     {} ({} steps of batch {} after {} warm-up steps)\n", ws, r.losses.size(), r.batch_size,
                          r.warmup_steps);
         const auto& b = r.breakdown;
         o << fmt::format(
             "  per step    data {:.2f} ms · h2d {:.2f} · forward {:.2f} · backward {:.2f} · optimizer {:.2f} · other {:.2f}\n",
             b.data_ms, b.h2d_ms, b.forward_ms, b.backward_ms, b.optimizer_ms, b.other_ms);
         o << fmt::format("  memory      peak RSS {}{}\n", fmt_bytes(r.peak_rss_bytes),
                          r.peak_device_bytes >= 0 ? ", device peak " + fmt_bytes(r.peak_device_bytes) : "");
         if (!r.host_malloc.empty())
           o << fmt::format("  host heap   {}; {:.0f} minor page faults per measured step\n", r.host_malloc,
                            r.minor_faults_per_step);
         if (!r.losses.empty()) o << fmt::format("  loss        {:.4f} → {:.4f}\n", r.losses.front(), r.losses.back());
         for (const auto& a : r.applied)
           o << fmt::format("  applied     {} = {} (observed {})\n", a.knob, a.requested, a.observed);
         for (const auto& s : r.skipped) o << fmt::format("  skipped     {}: {}\n", s.knob, s.reason);
         if (!r.data.source.empty()) {
           std::string bad;
           for (const auto& [k, v] : r.data.bad_by_reason) bad += fmt::format("{}{} {}", bad.empty() ? "" : ", ", k, v);
           o << fmt::format(
               "  data        {} ({}, {} workers, prefetch {}): {} images, {} bad{}; training thread waited {:.2f} s\n",
               r.data.source, r.data.decode, r.data.num_workers, r.data.prefetch, r.data.images_ok, r.data.images_bad,
               bad.empty() ? "" : " (" + bad + ")", r.data.wait_seconds);
         }
         return 0;
       }},
      {"profile", "trace a few steps of one config in a fresh worker: where the time goes, and a Chrome trace (Perfetto, HTA)",
       [&](CLI::App* c) {
         rf.add_to(c);
         c->add_option("--set", set_args, "knob=value (repeatable), e.g. --set precision=amp_bf16");
         c->add_option("--trace", trace_path, "write the trace here (Chrome trace JSON, kineto conventions)")->required();
         c->add_option("--steps", trace_steps, "steps to trace (after warm-up and as many untraced reference steps)")
             ->capture_default_str()
             ->check(CLI::Range(1, 1000));
         c->add_flag("--force", force, "replace an existing --trace file");
       },
       [&](std::ostream& o) {
         TrialPlan plan = rf.plan(set_args);
         plan.trace = rf.abs(trace_path);
         plan.trace_steps = trace_steps;
         if (fs::exists(plan.trace) && !force)
           throw UsageError(fmt::format("--trace {} already exists; pass --force to replace it", trace_path));
         const std::string worker = rf.worker_path();
         rf.check_plan(plan, worker);
         const fs::path dir = fs::temp_directory_path() / fmt::format("autotune-profile-{}", ::getpid());
         TrialRunner runner(RunnerOptions(worker, dir.string()).timeout_seconds(rf.trial_timeout));
         const TrialRecord rec = runner.run(plan, TrialKind::search, 1);
         fs::remove_all(dir);
         const TrialResult& r = rec.result;
         if (r.status != TrialStatus::ok || r.profile.empty()) {
           o << fmt::format("{} {}: {}: {}\n", r.workload, plan.config.key(), to_string(r.status), r.message);
           return 1;
         }
         const auto p = nlohmann::json::parse(r.profile);
         o << fmt::format("{} {} on {}: {} profile of {} steps ({})\n", r.workload, plan.config.key(), r.device,
                          p.value("mode", std::string()), p.value("steps", 0),
                          p.value("reason", std::string()).empty() ? "CUPTI activity" : p.value("reason", std::string()));
         o << fmt::format("  step        {:.2f} ms traced, {:.2f} ms untraced: tracing inflation {:.2f}×\n",
                          p.value("traced_step_ms", 0.0), p.value("untraced_step_ms", 0.0), p.value("inflation", 0.0));
         if (!p.value("valid", false)) o << "  invalid     " << p.value("invalid_reason", std::string()) << "\n";
         std::string phases;
         for (const auto& [k, v] : p.at("phase_ms").items())
           phases += fmt::format("{}{} {:.2f}", phases.empty() ? "" : " · ", k, v.get<double>());
         o << "  host ms     " << phases << "  (per step)\n";
         if (p.contains("loader"))
           o << fmt::format("  loader      {} threads busy {:.0f}%; the step waited {:.2f} ms for its batch\n",
                            p["loader"].value("num_workers", 0), 100 * p["loader"].value("utilisation", 0.0),
                            p["loader"].value("wait_ms_per_step", 0.0));
         if (p.contains("gpu_phase_ms") && !p.at("gpu_phase_ms").empty()) {
           std::string g;
           for (const auto& [k, v] : p.at("gpu_phase_ms").items())
             g += fmt::format("{}{} {:.2f}", g.empty() ? "" : " · ", k, v.get<double>());
           o << "  GPU ms      " << g << "  (per step, by the phase that launched it)\n";
         }
         if (p.value("gpu", false)) {
           const auto& idle = p.at("idle");
           o << fmt::format("  GPU         busy {:.0f}% · idle: host-wait {:.0f}%, kernel-wait {:.0f}%, other {:.0f}%\n",
                            100 * p.value("busy_share", 0.0), 100 * idle.value("host_wait", 0.0),
                            100 * idle.value("kernel_wait", 0.0), 100 * idle.value("other", 0.0));
           o << fmt::format("  kernels     {:.1f} per step · launch delay {:.1f} µs · {:.0f}% shorter than their launch\n",
                            p.value("kernels_per_step", 0.0), p.value("launch_delay_us", 0.0),
                            100 * p.value("short_kernel_share", 0.0));
           for (const auto& k : p.at("top_kernels"))
             o << fmt::format("    {:5.1f}%  {}× {}\n", 100 * k.value("share", 0.0), k.value("count", 0),
                              k.value("name", std::string()));
           o << fmt::format("  syncs       {:.2f} per step\n", p.value("syncs_per_step", 0.0));
           for (const auto& x : p.at("syncs"))
             o << fmt::format("    {:.2f}/step  {}\n", x.value("per_step", 0.0), x.value("what", std::string()));
           for (const auto& c : p.at("copies"))
             o << fmt::format("  copy        {}: {} bytes in {} copies, {:.1f} GB/s\n", c.value("kind", std::string()),
                              c.value("bytes", 0LL), c.value("count", 0LL), c.value("gb_per_s", 0.0));
           if (p.value("mfu", -1.0) >= 0)
             o << fmt::format("  MFU         {:.1f}% of {:.0f} TFLOP/s ({})\n", 100 * p.value("mfu", 0.0),
                              p.value("peak_tflops", 0.0), p.value("peak_basis", std::string()));
           else o << "  MFU         unknown: " << p.value("peak_basis", std::string()) << "\n";
         }
         o << "  verdict     " << p.value("verdict", std::string()) << " — " << p.value("verdict_detail", std::string()) << "\n";
         for (const auto& k : p.at("verdict_knobs"))
           o << fmt::format("    try {}: {}\n", k.get<std::string>(), find_knob(k.get<std::string>()).tip);
         o << "trace: " << plan.trace << " (open in https://ui.perfetto.dev, or load with Holistic Trace Analysis)\n";
         return 0;
       }},
      {"report", "regenerate best.json, report.md, report.html, results.json and junit.xml from a run's journal",
       [&](CLI::App* c) {
         c->add_option("dir", report_dir, "the run folder (holds journal.sqlite)")->required();
         c->add_option("--out", out_dir, "write the outputs here instead of into the run folder");
         c->add_flag("--summary", step_summary, "also append report.md to $GITHUB_STEP_SUMMARY (GitHub Actions job summary)");
       },
       [&](std::ostream& o) {
         const RunSummary s = load_run_summary(report_dir);
         const std::string dest = out_dir.empty() ? report_dir : out_dir;
         fs::create_directories(dest);
         print_outputs(write_reports(s, dest), o);
         if (step_summary) write_step_summary(s, o);
         return s.winner >= 0 ? 0 : 1;
       }},
      {"prepare-data", "decode an image folder once into a memory-mappable cache file (for decode=cache)",
       [&](CLI::App* c) {
         c->add_option("--from", prep.from, "image folder, ImageNet layout: DIR/<class>/<image>.jpg")->required();
         c->add_option("--to", prep.to, "cache file to write (refused if it exists, unless --force)")->required();
         c->add_option("--size", prep.side, "side S of the stored S×S images (shorter side resized to S, centre square)")
             ->capture_default_str()
             ->check(CLI::Range(8, 4096));
         c->add_flag("--force", prep.force, "replace an existing --to file");
         c->add_option("--threads", prep.threads, "decoding threads (default: all cores)")->check(CLI::Range(0, 1024));
         c->add_option("--max-bad-share", prep.max_bad_share, "fail when more than this share of files is bad")
             ->capture_default_str()
             ->check(CLI::Range(0.0, 1.0));
       },
       [&](std::ostream& o) {
         const data::PrepareReport r = data::prepare_cache(prep);
         o << fmt::format("wrote {} images of {}×{} to {} ({:.1f} MiB) in {:.1f} s ({:.0f} images/s); {}\n", r.written, prep.side,
                          prep.side, prep.to, static_cast<double>(r.bytes) / (1 << 20), r.seconds,
                          r.seconds > 0 ? static_cast<double>(r.written) / r.seconds : 0.0, r.bad);
         return 0;
       }},
      {"knobs", "list every knob: values, default, where it applies, tip",
       [&](CLI::App* c) { c->add_flag("--json", json_out, "print JSON"); },
       [&](std::ostream& o) {
         if (json_out) {
           nlohmann::json j = nlohmann::json::array();
           for (const auto& k : knob_catalog())
             j.push_back({{"name", k.name},
                          {"values", k.values},
                          {"domain", k.domain_text()},
                          {"default", k.default_value},
                          {"applies", k.applies},
                          {"tip", k.tip}});
           o << j.dump(2) << "\n";
           return 0;
         }
         for (const auto& k : knob_catalog()) {
           o << fmt::format("{}\n  values:  {}   (domain: {})\n  default: {}\n  applies: {}\n  tip:     {}\n\n", k.name,
                            join(k.values), k.domain_text(),
                            k.default_value == "workload" ? "the workload's default" : k.default_value, k.applies, k.tip);
         }
         return 0;
       }},
      {"workloads", "list the built-in workloads (asks autotune-worker)",
       [&](CLI::App* c) {
         c->add_flag("--json", json_out, "print JSON");
         c->add_option("--worker", rf.worker, "autotune-worker binary");
       },
       [&](std::ostream& o) {
         const auto ws = query_workloads(rf.worker_path());
         if (json_out) {
           o << nlohmann::json(ws).dump(2) << "\n";
           return 0;
         }
         for (const auto& w : ws)
           o << fmt::format("{}\n  {}\n  default batch: {} · {:.3g} FLOP/sample (fwd+bwd) · loss: {} · data: {}{}\n\n", w.name,
                            w.description, w.default_batch_size, w.flops_per_sample, w.loss, w.data,
                            w.conv_model ? " · convolutional" : "");
         return 0;
       }},
  };

  std::vector<std::string> names;
  std::vector<std::pair<CLI::App*, const Command*>> subs;
  for (const auto& c : commands) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    sub->allow_extras();  // we report unknown flags ourselves, with a did-you-mean
    c.setup(sub);
    subs.emplace_back(sub, &c);
    names.push_back(c.name);
  }

  // An unknown command gets a one-line error with the commands and a did-you-mean (CLI11 would only
  // say "arguments were not expected").
  if (!args.empty() && args[0].rfind("-", 0) != 0 && std::find(names.begin(), names.end(), args[0]) == names.end()) {
    err << fmt::format("autotune: unknown command '{}'; commands: {}{}\n", args[0], join(names), did_you_mean(args[0], names));
    return 2;
  }
  try {
    std::vector<std::string> rev(args.rbegin(), args.rend());  // CLI11 takes a reversed vector
    app.parse(rev);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help on a subcommand
      return app.exit(e, out, err);
    }
    err << "autotune: " << e.what() << "\n";
    return 2;
  }
  for (auto& [sub, cmd] : subs) {
    if (!sub->parsed()) continue;
    if (!sub->remaining().empty()) {
      const std::string bad = sub->remaining().front();
      std::vector<std::string> flags;
      for (const CLI::Option* opt : sub->get_options())
        for (const auto& l : opt->get_lnames()) flags.push_back("--" + l);
      const std::string head = bad.substr(0, bad.find('='));
      err << fmt::format("autotune {}: unknown {} '{}'; allowed: {}{}\n", cmd->name,
                         bad.rfind("-", 0) == 0 ? "option" : "argument", bad, join(flags), did_you_mean(head, flags));
      return 2;
    }
    try {
      return cmd->run(out);
    } catch (const UsageError& e) {
      err << fmt::format("autotune {}: {}\n", cmd->name, e.what());
      return 2;
    } catch (const std::exception& e) {
      err << fmt::format("autotune {}: error: {}\n", cmd->name, e.what());
      return 1;
    }
  }
  return 2;
}

}  // namespace autotune
