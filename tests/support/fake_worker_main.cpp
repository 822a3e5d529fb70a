// fake-worker: a deterministic stand-in for autotune-worker, for testing the tuner without LibTorch.
//
//   fake-worker run --plan P --result R      (also: workloads --json, info --json)
//
// Throughput is a separable objective of the knobs (so the optimum is known), with seeded ±1% window
// noise. Failures are injected per knob value through the environment:
//   FAKE_OOM_ABOVE=512          batch_size above this → status oom
//   FAKE_NAN=knob=value         → status non_finite
//   FAKE_DIVERGE=knob=value     → losses drift upward (the fp32 reference does not)
//   FAKE_NOISY=knob=value       → windows 0.7, 1.3, 1.0, … × the rate: IQR/median 30% (never stable)
//   FAKE_NOISY_TRIALS=0001,0004 → the same noise in the trials of those folders only (a config noisy once)
//   FAKE_INPUT_BOUND=knob=value → that config waits for its batches 60% of the step (breakdown), and its windows vary
//                                 as an input-bound step's do: 0.92, 1.08, 1.0 × the rate (IQR/median 8%) at the run's
//                                 window, 1/sqrt(k) of that at a window k× as long (each averages k× the batches)
//   FAKE_WINDOW_NOISE=0.12      → every other config's windows vary by up to ±12% (a noisy host; default ±1%)
//   FAKE_BUSY_TRIALS=0001,0004  → those trials were timed beside another program: host_load 1.0 of 2 CPUs, and
//                                 their throughput × FAKE_BUSY_FACTOR (default 1; 0.04: a baseline starved of a core)
//   FAKE_BUSY=knob=value        → the same for every trial of that config (a host that stays busy for it)
//                                 (every other trial reports host_load 0.01 of 2 CPUs: a quiet host)
//   FAKE_SLOW_TRIALS=0007,0009  → those trials' throughput × FAKE_SLOW_FACTOR (default 0.05), the host load quiet:
//                                 a confirmation that collapses for a reason the worker did not see
//   FAKE_COMPILE=knob=value     → that config's result carries a torch.compile record (12.5 s or FAKE_COMPILE_SECONDS, 4
//                                 graphs, 3 breaks: Tensor.item() ×2 and print(), 1 recompile), as the Python worker's does
//   FAKE_CRASH=knob=value       → abort() (SIGABRT)
//   FAKE_EXIT=knob=value        → exits with status 3 (after a line on stderr), writing no result
//   FAKE_HANG=knob=value        → sleeps forever
//   FAKE_SLEEP=seconds          → time each trial takes (default 0.02)
//   FAKE_LONG_TRIALS=0003,…     → those trial folders take FAKE_LONG_SECONDS (default 5) more: a budget spent at a known trial
//   FAKE_IGNORE_TERM=1          → ignores SIGTERM
//   FAKE_DRIFT_AFTER=N, FAKE_COUNTER=file → from the (N+1)-th run on, the whole "machine" is 20% slower
//   FAKE_CUDA=1                 → `info` reports one CUDA device (so CUDA-only knobs apply)
//   FAKE_GPUS=N                 → with FAKE_CUDA: `info` reports N devices
//   FAKE_RECORD_SLOT=1          → each run writes RESULT.slot: {"cpus": [its affinity], "omp": $OMP_NUM_THREADS,
//                                 "cuda": $CUDA_VISIBLE_DEVICES, "start": t, "end": t} (the executor's tests)
//   FAKE_CV=0.027               → each process is faster or slower by a draw from N(1, cv) (run-to-run noise)
//   FAKE_SCALE=0.95             → every throughput × 0.95 (a slower build, for the regression gate)
//   FAKE_MEM_SCALE=1.1          → peak memory × 1.1
//   FAKE_LANDSCAPE=file.json    → a measured landscape instead of the objective (bench/search_study.py fit):
//                                 `workloads` answers with its workload, every config's throughput is its
//                                 measured mean × one per-process draw × per-window draws (log-normal, the
//                                 fitted sigmas; a window eta× longer than the landscape's window_seconds has 1/sqrt(eta) of the window noise),
//                                 seeded by --seed and the trial's result path, so a run is reproducible;
//                                 a config the landscape does not hold → status error; "aliases" map a
//                                 value to the one it runs as ({"threads": {"default": "2"}})
//   FAKE_HOST_DRIFT=rho,share   → with FAKE_LANDSCAPE: a share of the process variance is the host drifting,
//                                 an AR(1) series over the run's trial numbers (trials/NNNN) with lag-1
//                                 correlation rho, seeded by --seed (one host per run); the rest stays an
//                                 independent draw per process (bench/search_study.py fits both from a grid)
//   FAKE_TOKENS=1               → the workload reads a token file (--data FILE is accepted; `describe` answers)
//   FAKE_NOISE_SCALE=200        → the gradient noise scale a noise-scale trial measures (default 200), and the one
//                                 a converge trial's loss follows: samples to a loss grow as 1 + B/B_noise
//   FAKE_LR_BEST=0.003          → a converge trial's progress per sample is scaled by g = (lr/best)·e^(1 − lr/best), 1 at
//                                 the best rate; above 8× it the loss climbs (divergence). A checkpoint (--save) holds
//                                 the progress made, and --init-from continues from it (default: the rate has no effect)
//   FAKE_NOISE_GROWTH=0.5       → along a noise-scale trial's windows B_simple grows as samples^0.5 (default 0)
//   FAKE_NOISE_JITTER=0.01      → the noise-scale trial's per-norm noise, ±1% (default ±30%)
//   FAKE_ACCUM_GAIN=0.5         → grad_accum k runs × (1 + 0.5·(1 − 1/k)) the samples/s: the optimizer step shared by
//                                 more micro-batches (default 0: grad_accum does not change samples/s)
// Noise-scale trials (plan.noise) record steps whose norms have the expectations of B_simple = FAKE_NOISE_SCALE;
// converge trials (plan.converge) train in simulated time (samples ÷ the objective's rate), no sleeping.
#include <sched.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "knobs/error.h"
#include "knobs/protocol.h"
#include "tests/support/fake_noise.h"

using namespace autotune;

namespace {

bool matches(const Config& c, const char* env) {
  const char* spec = std::getenv(env);
  if (!spec || !*spec) return false;
  const std::string s(spec);
  const auto eq = s.find('=');
  return eq != std::string::npos && c.get(s.substr(0, eq)) == s.substr(eq + 1);
}

/// Whether `folder` (a trial's, "0001") is among the comma-separated folders in $`env`.
bool listed(const std::string& folder, const char* env) {
  const char* spec = std::getenv(env);
  if (!spec || !*spec) return false;
  std::istringstream in(spec);
  for (std::string f; std::getline(in, f, ',');)
    if (f == folder) return true;
  return false;
}

double factor(const Config& c, const std::string& knob, std::initializer_list<std::pair<const char*, double>> table) {
  const std::string v = c.get(knob, "");
  for (const auto& [name, f] : table)
    if (v == name) return f;
  return 1.0;
}

/// samples/s: batch amortises a fixed per-step cost; other knobs multiply.
double objective(const Config& c, std::int64_t batch) {
  const double b = static_cast<double>(batch);
  double t = 10000.0 * b / (b + 64.0);
  t *= factor(c, "precision", {{"amp_bf16", 1.5}, {"tf32", 1.2}, {"amp_fp16", 1.6}});
  t *= factor(c, "optimizer_impl", {{"foreach", 1.1}, {"fused", 1.2}});
  t *= factor(c, "threads", {{"1", 0.6}});
  if (const char* g = std::getenv("FAKE_ACCUM_GAIN"); g && c.has("grad_accum"))
    t *= 1 + std::atof(g) * (1 - 1.0 / std::stod(c.get("grad_accum")));
  const char* zg = std::getenv("FAKE_ZERO_GRAD");  // zero_grad=none's factor: beyond its mechanism's bound when large
  t *= factor(c, "zero_grad", {{"none", zg ? std::atof(zg) : 1.02}});
  // FAKE_INTERACT "k1=v1,k2=v2,F": F more when both values are set (knobs that interact).
  if (const char* x = std::getenv("FAKE_INTERACT"); x && *x) {
    std::istringstream in(x);
    std::string a, b, f;
    std::getline(in, a, ',');
    std::getline(in, b, ',');
    std::getline(in, f);
    auto has = [&](const std::string& kv) {
      const auto eq = kv.find('=');
      return eq != std::string::npos && c.get(kv.substr(0, eq), "") == kv.substr(eq + 1);
    };
    if (has(a) && has(b)) t *= std::stod(f);
  }
  return t;
}

/// FAKE_LANDSCAPE's file, read once per process (nullptr when the variable is unset).
const nlohmann::json* landscape() {
  static const nlohmann::json j = [] {
    const char* p = std::getenv("FAKE_LANDSCAPE");
    if (!p || !*p) return nlohmann::json();
    std::ifstream in(p);
    if (!in) throw std::runtime_error(std::string("FAKE_LANDSCAPE ") + p + ": cannot read");
    return nlohmann::json::parse(in);
  }();
  return j.is_null() ? nullptr : &j;
}

/// The landscape's key of a config: its searched knobs' values in the landscape's order, a value the
/// landscape names as an alias replaced by what it runs as (threads=default → the cores PyTorch uses).
std::string landscape_key(const nlohmann::json& l, const Config& c) {
  std::string k;
  for (const auto& knob : l.at("knobs")) {
    const std::string name = knob.get<std::string>();
    std::string v = c.get(name, "");
    if (l.contains("aliases") && l["aliases"].contains(name) && l["aliases"][name].contains(v))
      v = l["aliases"][name][v].get<std::string>();
    k += (k.empty() ? "" : " ") + name + "=" + v;
  }
  return k;
}

/// The trial's folder name (trials/NNNN: the folder of its result file), not where the run folder is.
std::string trial_folder(const std::string& result_path) {
  return std::filesystem::path(result_path).parent_path().filename().string();
}

/// A random stream fixed by `seed` and the trial's folder name, so a run with the same seed draws the same
/// numbers wherever it runs.
std::mt19937_64 trial_rng(const std::string& trial_dir, std::uint64_t seed) {
  return std::mt19937_64(std::hash<std::string>{}(trial_dir) ^ (seed * 0x9E3779B97F4A7C15ULL));
}

}  // namespace

/// The fake workload as `workloads` and `describe` answer.
WorkloadInfo fake_workload() {
  WorkloadInfo w;
  w.name = "mlp";
  w.description = "fake objective";
  w.default_batch_size = 64;
  w.flops_per_sample = 1e6;
  w.loss = "cross_entropy";
  w.data = "none";
  if (const char* t = std::getenv("FAKE_TOKENS"); t && *t == '1') {
    w.token_vocab = 256;
    w.block_size = 16;
  }
  if (std::getenv("FAKE_HELD_OUT")) w.held_out = "the fake's held-out set";
  return w;
}

/// The data a trial read, as the workers report it: the plan's --data as a token file of one byte per token (the tests
/// write them so); no size when there is none.
void read_token_file(const TrialPlan& plan, TrialResult& r) {
  if (plan.setup.data.empty()) return;
  r.data.source = plan.setup.data;
  r.data.decode = "tokens";
  std::error_code ec;
  if (const auto size = std::filesystem::file_size(plan.setup.data, ec); !ec) r.data.dataset_size = static_cast<std::int64_t>(size);
}

double noise_scale_env() {
  const char* n = std::getenv("FAKE_NOISE_SCALE");
  return n ? std::atof(n) : 200.0;
}

/// plan.noise: steps of K micro-batches whose squared norms have E = |G|² + tr Σ / b and |G|² + tr Σ / B,
/// with |G|² = 1 and tr Σ = B_simple, times independent ±30% (uniform; FAKE_NOISE_JITTER=0.01 for ±1%) noise; the
/// plan's stopping rule. With windows
/// (plan.noise.windows), a burn-in of 32 steps (none without a burn-in: min_steps) and B_simple growing along the run as
/// FAKE_NOISE_SCALE × (samples / samples at the second window's start)^FAKE_NOISE_GROWTH (default 0); each step's loss
/// falls as 3 / (1 + step / 100), written to `losses`.
NoiseRecord fake_noise_trial(const TrialPlan& plan, std::int64_t b, int K, const std::string& result_path,
                             std::vector<double>& losses) {
  NoiseRecord rec;
  rec.micro_batch = b;
  rec.micro_batches = K;
  rec.weights = plan.setup.init_from.empty() ? "random init" : "checkpoint " + plan.setup.init_from;
  std::mt19937_64 rng = trial_rng(trial_folder(result_path), plan.setup.seed + 17);
  const char* jitter = std::getenv("FAKE_NOISE_JITTER");
  const double j = jitter ? std::atof(jitter) : 0.3;
  std::uniform_real_distribution<double> u(-j, j);
  const double B = static_cast<double>(b * K);
  const int windows = plan.noise.windows;
  const int n0 = windows > 0 && plan.noise.burn_in_seconds > 0 ? 32 : plan.noise.min_steps;
  if (windows > 0) {
    rec.windows = windows;
    rec.first_window_end = 2 * n0 * b * K;
    if (plan.noise.burn_in_seconds > 0) {
      rec.burn_in_steps = n0;
      rec.burn_in_seconds = 0.01 * n0;
    }
  }
  const char* g = std::getenv("FAKE_NOISE_GROWTH");
  const double growth = g ? std::atof(g) : 0.0;
  rec.stopped = "max_steps";
  for (int i = 1; i <= plan.noise.max_steps; ++i) {
    const int step = rec.burn_in_steps + i;
    const double tr = noise_scale_env() * std::pow(static_cast<double>(step) / (2.0 * n0), windows > 0 ? growth : 0.0);
    rec.steps.push_back({(1 + tr / static_cast<double>(b)) * (1 + u(rng)), (1 + tr / B) * (1 + u(rng))});
    losses.push_back(3.0 / (1.0 + step / 100.0));
    if (windows > 0 && step >= (n0 << windows)) {
      rec.stopped = "windows";
      break;
    }
    if (windows == 0 && i >= plan.noise.min_steps &&
        estimate_noise_scale(rec.steps, static_cast<double>(b), B).rel_se <= plan.noise.target_rel_se) {
      rec.stopped = "target";
      break;
    }
  }
  rec.seconds = 0.01 * static_cast<double>(rec.steps.size());
  rec.loss_first = 2.5;
  rec.loss_last = 2.0;
  return rec;
}

/// plan.converge: loss 1 + 4 / (1 + e / 2000) in "effective samples", each step adding B / (1 + B / B_noise) of them,
/// ±1% per step; time = Σ B ÷ the rate at the step's grad_accum (simulated, the fake does not sleep). A batch ramp
/// (plan.converge.ramp) switches grad_accum after the step that reaches each phase's samples. `micro` is batch_size × ranks.
ConvergeRecord fake_converge_trial(const TrialPlan& plan, std::int64_t micro, int accum, const std::function<double(int)>& rate) {
  ConvergeRecord rec;
  rec.lr = plan.setup.learning_rate();
  rec.smooth_samples = plan.converge.smooth_samples;
  const double bn = noise_scale_env();
  std::mt19937_64 rng(plan.setup.data_seed() + 5);
  std::uniform_real_distribution<double> u(-0.01, 0.01);
  const auto& p = plan.converge;
  std::int64_t samples = 0;
  double e = 0, seconds = 0;
  if (!plan.setup.init_from.empty()) std::ifstream(plan.setup.init_from) >> e;  // a fake checkpoint: the progress made
  const char* best_env = std::getenv("FAKE_LR_BEST");
  const double best = best_env ? std::atof(best_env) : 0, x = best > 0 ? plan.setup.learning_rate() / best : 1;
  const double gain = best > 0 ? x * std::exp(1 - x) : 1;
  const double start = 1 + 4 / (1 + e / 2000);
  std::size_t next = 0;
  auto switch_phases = [&] {
    for (; next < p.ramp.size() && samples >= p.ramp[next].from_samples; ++next) {
      accum = p.ramp[next].grad_accum;
      if (p.ramp[next].from_samples > 0) rec.switched_at.push_back(samples);
    }
  };
  switch_phases();
  // FAKE_HELD_OUT: the held-out loss is the training loss without its noise, plus FAKE_VAL_GAP (0.5) × how far the
  // rate is above FAKE_VAL_BEST (none when unset): a rate that trains faster than it generalises. Evaluated as the
  // Python worker does, at the start, at the first step past each multiple of val_every, and at the end.
  const bool held = p.val_every > 0 && std::getenv("FAKE_HELD_OUT");
  const char* val_best_env = std::getenv("FAKE_VAL_BEST");
  const double val_best = val_best_env ? std::atof(val_best_env) : 0;
  const double gap = val_best > 0 ? (std::getenv("FAKE_VAL_GAP") ? std::atof(std::getenv("FAKE_VAL_GAP")) : 0.5) *
                                        std::max(0.0, plan.setup.learning_rate() / val_best - 1)
                                  : 0;
  std::int64_t next_val = 0;
  double clean = start;  // the last step's loss without its noise
  auto evaluate = [&] {
    rec.val_points.push_back({samples, seconds, clean + gap});
    while (next_val <= samples) next_val += p.val_every;
  };
  if (held) evaluate();
  while (true) {
    const std::int64_t B = micro * accum;
    samples += B;
    e += gain * static_cast<double>(B) / (1 + static_cast<double>(B) / bn);
    seconds += static_cast<double>(B) / rate(accum);
    const double loss = x > 8 ? start * (1 + static_cast<double>(samples) / 1000) : 1 + 4 / (1 + e / 2000);
    rec.points.push_back({samples, seconds, loss * (1 + u(rng))});
    clean = loss;
    if (held && samples >= next_val) evaluate();
    switch_phases();
    if (p.target_loss > 0 && samples >= p.smooth_samples &&
        smoothed_loss(rec.points, rec.points.size() - 1, p.smooth_samples) <= p.target_loss) {
      rec.stopped = "target";
      break;
    }
    if (rec.points.back().seconds >= p.max_seconds) {
      rec.stopped = "max_seconds";
      break;
    }
    if (p.max_samples > 0 && samples >= p.max_samples) {
      rec.stopped = "max_samples";
      break;
    }
  }
  if (held) {
    if (rec.val_points.back().samples < samples) evaluate();
    rec.val_samples = p.val_samples;
    rec.val_source = "the fake's held-out set";
  }
  if (!p.save_checkpoint.empty()) {
    std::ofstream(p.save_checkpoint) << e << "\n";
    rec.checkpoint = p.save_checkpoint;
  }
  return rec;
}

int run(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "workloads" && landscape()) {
    std::cout << nlohmann::json::array({landscape()->at("workload_info")}).dump() << "\n";
    return 0;
  }
  if (argc >= 2 && std::string(argv[1]) == "workloads") {
    std::cout << nlohmann::json(std::vector<WorkloadInfo>{fake_workload()}).dump() << "\n";
    return 0;
  }
  if (argc >= 2 && std::string(argv[1]) == "describe") {  // the setup is not read: one workload
    std::cout << nlohmann::json(fake_workload()).dump() << "\n";
    return 0;
  }
  if (argc >= 2 && std::string(argv[1]) == "info") {
    EnvFingerprint e;
    e.torch_version = "2.11.0";
    e.device_name = "fake CPU";
    if (const char* cuda = std::getenv("FAKE_CUDA"); cuda && *cuda == '1') {
      e.cuda_available = true;
      e.device_count = std::getenv("FAKE_GPUS") ? std::atoi(std::getenv("FAKE_GPUS")) : 1;
      e.device_name = "fake GPU";
    }
    e.cpu_cores = 2;
    e.hostname = "fake";
    e.autotune_version = "test";
    std::cout << nlohmann::json(e).dump() << "\n";
    return 0;
  }
  std::string plan_path, result_path;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--plan") plan_path = argv[i + 1];
    if (std::string(argv[i]) == "--result") result_path = argv[i + 1];
  }
  const TrialPlan plan = read_plan(plan_path);
  const Config& c = plan.config;
  if (std::getenv("FAKE_IGNORE_TERM")) std::signal(SIGTERM, SIG_IGN);  // a worker deaf to SIGTERM: only SIGKILL stops it
  const char* sleep_env = std::getenv("FAKE_SLEEP");
  const double started = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::this_thread::sleep_for(std::chrono::duration<double>(sleep_env ? std::atof(sleep_env) : 0.02));
  if (const char* rs = std::getenv("FAKE_RECORD_SLOT"); rs && *rs == '1') {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
      for (int i = 0; i < CPU_SETSIZE; ++i)
        if (CPU_ISSET(i, &set)) cpus.push_back(i);
    const auto env = [](const char* n) { return std::string(std::getenv(n) ? std::getenv(n) : ""); };
    std::ofstream(result_path + ".slot")
        << nlohmann::json{{"cpus", cpus}, {"omp", env("OMP_NUM_THREADS")}, {"cuda", env("CUDA_VISIBLE_DEVICES")},
                          {"start", started},
                          {"end", std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()}}
               .dump();
  }
  if (listed(trial_folder(result_path), "FAKE_LONG_TRIALS")) {
    const char* more = std::getenv("FAKE_LONG_SECONDS");
    std::this_thread::sleep_for(std::chrono::duration<double>(more ? std::atof(more) : 5.0));
  }
  if (matches(c, "FAKE_HANG")) std::this_thread::sleep_for(std::chrono::hours(1));
  if (matches(c, "FAKE_EXIT")) {
    std::cerr << "fake-worker: exiting with status 3 as asked\n";
    return 3;
  }
  if (matches(c, "FAKE_CRASH")) {
    std::cerr << "fake-worker: crashing as asked\n";
    std::abort();
  }

  TrialResult r;
  r.workload = plan.setup.workload;
  r.config = c;
  r.device = "cpu";
  r.batch_size = c.has("batch_size") ? std::stoll(c.get("batch_size")) : 64;
  r.env.torch_version = "2.11.0";
  r.host_total_bytes = 1LL << 34;
  r.peak_rss_bytes = (100LL << 20) + r.batch_size * (1LL << 20);
  if (const char* m = std::getenv("FAKE_MEM_SCALE"))
    r.peak_rss_bytes = static_cast<std::int64_t>(r.peak_rss_bytes * std::atof(m));
  const char* oom_env = std::getenv("FAKE_OOM_ABOVE");
  if (oom_env && r.batch_size > std::atoll(oom_env)) {
    r.status = TrialStatus::oom;
    r.message = "CUDA out of memory (fake)";
    write_result(r, result_path);
    return 0;
  }
  const int accum = c.has("grad_accum") ? std::stoi(c.get("grad_accum")) : 1;
  double truth = objective(c, r.batch_size);
  if (const char* scale = std::getenv("FAKE_SCALE")) truth *= std::atof(scale);
  if (const char* cv = std::getenv("FAKE_CV")) {  // a fresh draw per process
    // FAKE_CV_SEED fixes the draws (trial_rng), so a test's outcome does not hang on an unlucky draw;
    // without it, random.
    const char* fixed = std::getenv("FAKE_CV_SEED");
    std::mt19937_64 rng = fixed ? trial_rng(trial_folder(result_path), std::strtoull(fixed, nullptr, 10))
                                : std::mt19937_64(std::random_device{}() ^ (static_cast<std::uint64_t>(::getpid()) << 32));
    truth *= autotune::testing::process_factor(rng, std::atof(cv));
  }
  if (const char* after = std::getenv("FAKE_DRIFT_AFTER")) {
    const char* counter = std::getenv("FAKE_COUNTER");
    int n = 0;
    try {
      n = std::stoi(read_file(counter));
    } catch (const std::exception&) {
    }
    write_file_atomic(counter, std::to_string(n + 1));
    if (n >= std::atoi(after)) truth *= 0.8;
  }
  if (plan.noise.on) {  // untimed: no windows
    if (accum < 2) {
      r.status = TrialStatus::error;
      r.message = "a noise-scale trial needs grad_accum ≥ 2";
    } else {
      r.noise = fake_noise_trial(plan, r.batch_size, accum, result_path, r.losses);
      r.status = TrialStatus::ok;
    }
    read_token_file(plan, r);
    write_result(r, result_path);
    return 0;
  }
  if (plan.converge.on) {
    const std::int64_t micro = r.batch_size * (c.has("ranks") ? std::stoll(c.get("ranks")) : 1);
    const double scale = truth / objective(c, r.batch_size);  // FAKE_SCALE and friends, kept at every grad_accum
    r.converge = fake_converge_trial(plan, micro, accum, [&](int k) {
      Config ck = c;
      ck.set("grad_accum", std::to_string(k));
      return objective(ck, r.batch_size) * scale;
    });
    const auto& pts = r.converge->points;
    r.windows.push_back({static_cast<int>(pts.size()), pts.back().samples, pts.back().seconds});
    for (const auto& p : pts) r.losses.push_back(p.loss);
    r.status = TrialStatus::ok;
    read_token_file(plan, r);
    write_result(r, result_path);
    return 0;
  }
  const bool noisy = matches(c, "FAKE_NOISY") || listed(trial_folder(result_path), "FAKE_NOISY_TRIALS");
  const bool input_bound = matches(c, "FAKE_INPUT_BOUND");
  const bool busy = matches(c, "FAKE_BUSY") || listed(trial_folder(result_path), "FAKE_BUSY_TRIALS");
  r.host_load = HostLoad{busy ? 1.0 : 0.01, 2, 1.0};
  if (busy) truth *= std::getenv("FAKE_BUSY_FACTOR") ? std::atof(std::getenv("FAKE_BUSY_FACTOR")) : 1.0;
  if (matches(c, "FAKE_GPU_BUSY")) {  // another process held the GPU (the CPUs quiet): what NVML would have said
    r.device_holders = DeviceHolders{1, 1024.0 * (1 << 20), 2};
    truth *= std::getenv("FAKE_BUSY_FACTOR") ? std::atof(std::getenv("FAKE_BUSY_FACTOR")) : 1.0;
  }
  if (listed(trial_folder(result_path), "FAKE_SLOW_TRIALS"))
    truth *= std::getenv("FAKE_SLOW_FACTOR") ? std::atof(std::getenv("FAKE_SLOW_FACTOR")) : 0.05;
  const char* host_noise = std::getenv("FAKE_WINDOW_NOISE");
  const double amp = host_noise ? std::atof(host_noise) : 0.01;
  auto add_window = [&](double rate) {  // 20 steps at `rate` samples/s
    const int steps = 20;
    const std::int64_t samples = steps * r.batch_size * accum;
    r.windows.push_back({steps, samples, samples / rate});
  };
  if (const nlohmann::json* l = landscape()) {
    const std::string key = landscape_key(*l, c);
    const auto& configs = l->at("configs");
    if (!configs.contains(key)) {
      r.status = TrialStatus::error;
      r.message = "not in the landscape: " + key;
      write_result(r, result_path);
      return 0;
    }
    // One draw per process, then one per window, from the stream of the run's seed and this trial (trial_rng).
    const std::string trial_dir = trial_folder(result_path);
    std::mt19937_64 rng = trial_rng(trial_dir, plan.setup.seed);
    std::normal_distribution<double> z(0.0, 1.0);
    const double sigma_p = l->at("sigma_process").get<double>();
    const double own = z(rng);  // this process's draw
    double host_drift = 0, share = 0;  // the host's AR(1) state at this trial, and its share of the variance
    if (const char* hd = std::getenv("FAKE_HOST_DRIFT"); hd && *hd) {
      double rho = 0;
      if (std::sscanf(hd, "%lf,%lf", &rho, &share) != 2 || rho < 0 || rho >= 1 || share < 0 || share > 1)
        throw std::runtime_error(std::string("FAKE_HOST_DRIFT ") + hd + ": want rho,share with 0 <= rho < 1, 0 <= share <= 1");
      long n = 0;
      for (char ch : trial_dir) n = std::isdigit(static_cast<unsigned char>(ch)) ? n * 10 + (ch - '0') : n;
      std::mt19937_64 host(plan.setup.seed * 0xD1B54A32D192ED03ULL + 1);  // the same series for every trial of the run
      std::normal_distribution<double> zh(0.0, 1.0);  // its own: a distribution caches draws of its engine
      double x = zh(host);
      for (long k = 1; k <= n; ++k) x = rho * x + std::sqrt(1 - rho * rho) * zh(host);
      host_drift = x;
    }
    const double process = std::exp(sigma_p * (std::sqrt(share) * host_drift + std::sqrt(1 - share) * own));
    const double scale = std::max(1.0, plan.setup.measure.window_min_seconds / l->value("window_seconds", 1.0));
    const double sigma_w = l->at("sigma_window").get<double>() / std::sqrt(scale);
    const double mean = configs.at(key).at("rate").get<double>();
    for (int w = 0; w < plan.setup.measure.windows; ++w) {
      add_window(mean * process * std::exp(sigma_w * z(rng)));
    }
  } else {
    // Noise seeded by config and seed: the same plan gives the same numbers.
    std::size_t h = std::hash<std::string>{}(c.key()) ^ (plan.setup.seed * 0x9E3779B97F4A7C15ULL);
    for (int w = 0; w < plan.setup.measure.windows; ++w) {
      h = h * 6364136223846793005ULL + 1442695040888963407ULL;
      const double u = static_cast<double>((h >> 11) & ((1ULL << 53) - 1)) / static_cast<double>(1ULL << 53);  // [0,1)
      static constexpr double kNoisy[] = {-0.3, 0.3, 0.0};  // a fixed 30% IQR, under any noise limit up to 4 × 5%
      static constexpr double kInputBound[] = {-0.08, 0.08, 0.0};  // 8% IQR at the run's window (see above)
      const double k = std::max(1.0, plan.setup.measure.window_min_seconds / MeasureOptions{}.window_min_seconds);
      add_window(truth * (noisy         ? 1 + kNoisy[w % 3]
                          : input_bound ? 1 + kInputBound[w % 3] / std::sqrt(k)
                                        : 1 + amp * (2 * u - 1)));
    }
  }
  if (input_bound) r.breakdown = Breakdown{6.0, 0.0, 1.5, 2.0, 0.5, 0.0};  // data 60% of a 10-ms step
  const bool diverge = matches(c, "FAKE_DIVERGE");
  for (int i = 0; i < 10; ++i) r.warmup_losses.push_back(2.5 - 0.05 * i);
  for (int i = 0; i < 60; ++i) r.losses.push_back(diverge ? 2.0 + 0.05 * i : 2.0 - 0.01 * i);
  if (matches(c, "FAKE_NAN")) {
    r.losses[5] = std::nan("");
    r.non_finite_steps = 1;
    r.status = TrialStatus::non_finite;
    r.message = "1 of 60 measured losses are non-finite";
  } else {
    r.status = TrialStatus::ok;
  }
  r.applied.push_back({"batch_size", c.get("batch_size", "workload default"), std::to_string(r.batch_size)});
  if (matches(c, "FAKE_COMPILE") && r.status == TrialStatus::ok) {  // the Python worker's compile record, as it writes one
    CompileRecord rec;
    rec.mode = "default";
    rec.seconds = std::getenv("FAKE_COMPILE_SECONDS") ? std::atof(std::getenv("FAKE_COMPILE_SECONDS")) : 12.5;
    rec.first_step_seconds = rec.seconds + 0.1;
    rec.graphs = 4;
    rec.graph_breaks = 3;
    rec.break_reasons = {"Tensor.item()", "Tensor.item()", "print()"};
    rec.recompiles = 1;
    rec.cache_misses = 4;
    r.compile = rec;
  }
  if (!plan.trace.empty() && r.status == TrialStatus::ok) {  // a traced trial: a host-only profile and a trace file
    r.profile = nlohmann::json::parse(
                    R"({"valid": true, "gpu": false, "mode": "host-only", "reason": "fake worker: host-only profile", "steps": 5,
                    "step_ms": 10.0, "traced_step_ms": 10.5, "untraced_step_ms": 10.0, "inflation": 1.05,
                    "phase_ms": {"data": 1.0, "forward": 3.0, "backward": 4.0, "optimizer": 2.0},
                    "verdict": "compute-bound", "verdict_detail": "host only: forward+backward 70% of the step",
                    "verdict_knobs": ["precision", "batch_size"]})")
                    .get<ProfileSummary>();
    write_file_atomic(plan.trace, R"({"traceEvents": []})");
  }
  write_result(r, result_path);
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const DiskFull& e) {  // as autotune-worker does (workloads/worker_main.cpp)
    std::cerr << "fake-worker: " << e.what() << "\n";
    return kExitDiskFull;
  }
}
