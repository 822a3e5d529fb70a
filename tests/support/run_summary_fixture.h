#pragma once
// A fixed RunSummary for the reporters' tests: baseline, a winner, an OOM config, one unexplored.
#include <string>

#include "reports/summary.h"

namespace autotune::testing {

inline ConfigSummary cfg(const std::string& batch, double med, bool eligible, const std::string& reason = "") {
  ConfigSummary c;
  c.config.set("batch_size", batch).set("threads", "1");
  c.status = eligible || !reason.empty() ? TrialStatus::ok : TrialStatus::oom;
  c.median = med;
  c.ci_lo = med * 0.98;
  c.ci_hi = med * 1.02;
  c.rel_iqr = 0.012;
  c.throughputs = {med * 0.99, med, med * 1.01};
  c.peak_bytes = 400LL << 20;
  c.batch_size = std::stoll(batch);
  c.eligible = eligible;
  c.reason = reason;
  c.trial_ids = {1};
  c.checks = {{"survival", true, "worker finished (exit 0)"}};
  return c;
}

inline RunSummary summary() {
  RunSummary s;
  s.workload.name = "mlp";
  s.workload.description = "MLP | test";
  s.env.torch_version = "2.11.0";
  s.env.cuda_compiled = "13.0";
  s.env.cpu_cores = 2;
  s.env.autotune_version = "0.1.0";
  s.strategy = "grid";
  s.space = "batch_size={64,256} threads={1}";
  s.configs = {cfg("64", 6000, true), cfg("256", 12345.6, true), cfg("512", 0, false)};
  s.configs[0].is_baseline = true;
  s.configs[2].reason = "oom: CUDA out of memory";
  s.baseline = 0;
  s.winner = 1;
  s.speedup = 2.06;
  s.speedup_lo = 1.9;
  s.speedup_hi = 2.1;
  s.speedup_basis = "interleaved confirmation runs, paired round by round (winner ÷ baseline 2.03×, 2.09× in the 2 rounds; their geometric mean)";
  s.confirmation = {true, true, 4, 12000, 11900, 12100, 2.06, "fresh process: ok"};
  s.trials_run = 4;
  s.budget_seconds = 600;
  s.elapsed_seconds = 36;
  s.unexplored = {Config().set("batch_size", "1024")};
  return s;
}

}  // namespace autotune::testing
