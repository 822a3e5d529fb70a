// autotune trial: one config in a fresh worker process, its measurement printed.
#include <fmt/format.h>

#include <memory>
#include <stdexcept>
#include <nlohmann/json.hpp>
#include <ostream>

#include "knobs/numbers.h"
#include "tuner/commands/command.h"
#include "tuner/measures/statistics.h"

namespace autotune::cli {

namespace {

struct TrialArgs {
  TrialFlags trial;
  std::vector<std::string> set;
  std::string out_dir;
  bool json = false;
};


/// The measurement of a successful trial, one aspect per line.
void print_measurement(const TrialResult& r, std::ostream& o) {
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
  o << fmt::format("  memory      peak RSS {}{}\n", mib(r.peak_rss_bytes),
                   r.peak_device_bytes >= 0 ? ", device peak " + mib(r.peak_device_bytes) : "");
  if (const auto& m = r.memory)
    o << fmt::format("  device mem  {} peak ({}): forward+backward {}, optimizer {}; states {} (params {}, grads {}, "
                     "optimizer {}{}){}\n",
                     format_bytes(m->peak_allocated), m->allocator, format_bytes(m->forward_backward_peak),
                     format_bytes(m->optimizer_peak), format_bytes(m->states_bytes()), format_bytes(m->param_bytes),
                     format_bytes(m->grad_bytes), format_bytes(m->optimizer_bytes),
                     m->bucket_bytes ? ", buckets " + format_bytes(m->bucket_bytes) : "",
                     m->capacity_bytes > 0 ? fmt::format(" of {}", format_bytes(m->capacity_bytes)) : "");
  if (!r.host_malloc.empty())
    o << fmt::format("  host heap   {}; {:.0f} minor page faults per measured step\n", r.host_malloc, r.minor_faults_per_step);
  if (!r.losses.empty()) o << fmt::format("  loss        {:.4f} → {:.4f}\n", r.losses.front(), r.losses.back());
  if (const auto& c = r.compile)
    o << fmt::format("  compile     {}: {:.1f} s (first step {:.1f} s, a steady one {:.3f} s); {} graph(s), {} graph break(s){}, "
                     "{} recompile(s); inductor cache {} hit(s), {} miss(es)\n",
                     c->mode, c->seconds, c->first_step_seconds, c->first_step_seconds - c->seconds, c->graphs, c->graph_breaks,
                     c->break_reasons.empty() ? "" : " (" + c->break_reasons.front() + ")", c->recompiles, c->cache_hits,
                     c->cache_misses);
  for (const auto& a : r.applied) o << fmt::format("  applied     {} = {} (observed {})\n", a.knob, a.requested, a.observed);
  for (const auto& s : r.skipped) o << fmt::format("  skipped     {}: {}\n", s.knob, s.reason);
  if (!r.data.source.empty()) {
    std::string bad;
    for (const auto& [k, v] : r.data.bad_by_reason) bad += fmt::format("{}{} {}", bad.empty() ? "" : ", ", k, v);
    o << fmt::format("  data        {} ({}, {} workers, prefetch {}): {} images, {} bad{}; training thread waited {:.2f} s\n",
                     r.data.source, r.data.decode, r.data.num_workers, r.data.prefetch, r.data.images_ok, r.data.images_bad,
                     bad.empty() ? "" : " (" + bad + ")", r.data.wait_seconds);
  }
}

int run(const TrialArgs& a, std::ostream& o) {
  const TrialPlan plan = a.trial.plan(a.set);
  const TrialRecord rec = a.trial.run_checked(plan, a.out_dir);
  const TrialResult& r = rec.result;
  if (a.json) o << nlohmann::json(r).dump(2) << "\n";
  else o << fmt::format("{} {} on {}: {}\n", r.workload, plan.config.key(), r.device.empty() ? "?" : r.device, to_string(r.status));
  // A failed trial (bad data, OOM, a crash) is one line on stderr and exit 1, as every other error.
  if (r.status != TrialStatus::ok) throw std::runtime_error(fmt::format("the trial ended with {}: {}", to_string(r.status), r.message));
  if (a.json) return 0;
  print_measurement(r, o);
  return 0;
}

}  // namespace

Command trial_command() {
  auto a = std::make_shared<TrialArgs>();
  return {"trial", "run one config in a fresh worker process and print its measurement",
          [a](CLI::App* c) {
            a->trial.add_to(c);
            c->add_option("--set", a->set, "knob=value (repeatable), e.g. --set batch_size=64");
            c->add_option("--out", a->out_dir, "keep plan.json/result.json/stderr.log in this folder (default: a temporary one)");
            c->add_flag("--json", a->json, "print result.json");
          },
          [a](std::ostream& o) { return run(*a, o); }};
}

}  // namespace autotune::cli
