#include "knobs/protocol.h"

#include <fmt/format.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <limits>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "knobs/error.h"
#include "knobs/json_get.h"

namespace autotune {

using nlohmann::json;

namespace {

/// JSON has no NaN/Inf: a non-finite loss is written as null and read back as NaN, so a diverged
/// trial's result stays readable (and is classified non_finite, not "unusable").
json losses_to_json(const std::vector<double>& v) {
  json a = json::array();
  for (double x : v) a.push_back(finite_or_null(x));
  return a;
}
std::vector<double> losses_from_json(const json& j, const char* key) {
  std::vector<double> out;
  if (auto it = j.find(key); it != j.end() && it->is_array())
    for (const auto& x : *it) out.push_back(x.is_null() ? std::numeric_limits<double>::quiet_NaN() : x.get<double>());
  return out;
}

double number_or_nan(const json& x) {
  if (x.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!x.is_number()) throw std::runtime_error("expected a number or null, got " + x.dump());
  return x.get<double>();
}

void check_schema(const json& j, const char* expected) {
  const std::string got = j.value("schema", std::string());
  if (got != expected) throw std::runtime_error(fmt::format("schema '{}' is not supported; expected '{}'", got, expected));
}

}  // namespace

std::string rank_trace_path(const std::string& trace, int rank) {
  const std::string tail = ".json";
  const bool json = trace.size() > tail.size() && trace.compare(trace.size() - tail.size(), tail.size(), tail) == 0;
  return (json ? trace.substr(0, trace.size() - tail.size()) : trace) + "/rank" + std::to_string(rank) + ".json";
}

std::string to_string(TrialStatus s) {
  switch (s) {
    case TrialStatus::ok:
      return "ok";
    case TrialStatus::oom:
      return "oom";
    case TrialStatus::non_finite:
      return "non_finite";
    case TrialStatus::crash:
      return "crash";
    case TrialStatus::timeout:
      return "timeout";
    case TrialStatus::error:
      return "error";
  }
  return "error";
}

TrialStatus trial_status_from_string(const std::string& s) {
  for (auto st :
       {TrialStatus::ok, TrialStatus::oom, TrialStatus::non_finite, TrialStatus::crash, TrialStatus::timeout, TrialStatus::error})
    if (to_string(st) == s) return st;
  throw std::invalid_argument("unknown trial status '" + s + "'");
}

double DistInfo::comm_ms_per_step() const {
  double s = 0;
  for (const auto& r : ranks) s += r.comm_ms_per_step;
  return ranks.empty() ? 0 : s / ranks.size();
}

bool DistInfo::comm_timed() const {
  return std::all_of(ranks.begin(), ranks.end(), [](const RankStats& r) { return r.comm_timed; });
}

double DistInfo::overlap_share() const {
  double c = 0, o = 0;
  for (const auto& r : ranks) {
    c += r.comm_ms_per_step;
    o += r.overlap_ms_per_step;
  }
  return c > 0 ? o / c : 0;
}

void to_json(json& j, const RankStats& r) {
  j = {{"rank", r.rank},
       {"host", r.host},
       {"step_ms", r.step_ms},
       {"comm_ms_per_step", r.comm_ms_per_step},
       {"overlap_ms_per_step", r.overlap_ms_per_step},
       {"comm_timed", r.comm_timed},
       {"collectives_per_step", r.collectives_per_step},
       {"comm_bytes_per_step", r.comm_bytes_per_step},
       {"peak_rss_bytes", r.peak_rss_bytes},
       {"peak_device_bytes", r.peak_device_bytes}};
}
void from_json(const json& j, RankStats& r) {
  get_opt(j, "rank", r.rank);
  get_opt(j, "host", r.host);
  get_opt(j, "step_ms", r.step_ms);
  get_opt(j, "comm_ms_per_step", r.comm_ms_per_step);
  get_opt(j, "overlap_ms_per_step", r.overlap_ms_per_step);
  get_opt(j, "comm_timed", r.comm_timed);
  get_opt(j, "collectives_per_step", r.collectives_per_step);
  get_opt(j, "comm_bytes_per_step", r.comm_bytes_per_step);
  get_opt(j, "peak_rss_bytes", r.peak_rss_bytes);
  get_opt(j, "peak_device_bytes", r.peak_device_bytes);
}
void to_json(json& j, const DistInfo& d) {
  j = {{"world", d.world},
       {"backend", d.backend},
       {"backend_version", d.backend_version},
       {"launcher", d.launcher},
       {"store", d.store},
       {"bucket_bytes", d.bucket_bytes},
       {"ranks", d.ranks},
       {"comm_ms_per_step", d.comm_ms_per_step()},
       {"overlap_share", d.overlap_share()},
       {"comm_timed", d.comm_timed()}};
}
void from_json(const json& j, DistInfo& d) {
  get_opt(j, "world", d.world);
  get_opt(j, "backend", d.backend);
  get_opt(j, "backend_version", d.backend_version);
  get_opt(j, "launcher", d.launcher);
  get_opt(j, "store", d.store);
  get_opt(j, "bucket_bytes", d.bucket_bytes);
  d.ranks.clear();
  if (auto it = j.find("ranks"); it != j.end() && it->is_array())
    for (const auto& r : *it) d.ranks.push_back(r.get<RankStats>());
}

void to_json(json& j, const Placement& p) {
  j = {{"host", p.host},   {"executor", p.executor}, {"seq", p.seq}, {"slot", p.slot},           {"slots", p.slots},
       {"cpus", p.cpus},   {"devices", p.devices},   {"neighbours", p.neighbours}, {"alone", p.alone()}};
  if (!p.lost.empty()) j["lost"] = p.lost;
  if (!p.rank_hosts.empty()) j["rank_hosts"] = p.rank_hosts;
}
void from_json(const json& j, Placement& p) {
  get_opt(j, "host", p.host);
  get_opt(j, "executor", p.executor);
  get_opt(j, "seq", p.seq);
  get_opt(j, "slot", p.slot);
  get_opt(j, "slots", p.slots);
  get_opt(j, "cpus", p.cpus);
  get_opt(j, "devices", p.devices);
  p.neighbours.clear();
  if (auto it = j.find("neighbours"); it != j.end() && it->is_array())
    for (const auto& n : *it)
      if (n.is_number_integer()) p.neighbours.push_back(n.get<int>());
  for (auto [key, list] : {std::pair<const char*, std::vector<std::string>*>{"lost", &p.lost}, {"rank_hosts", &p.rank_hosts}}) {
    list->clear();
    if (auto it = j.find(key); it != j.end() && it->is_array())
      for (const auto& n : *it)
        if (n.is_string()) list->push_back(n.get<std::string>());
  }
}

std::vector<double> TrialResult::throughputs() const {
  std::vector<double> t;
  for (const auto& w : windows) t.push_back(w.samples_per_s());
  return t;
}

void to_json(json& j, const Config& c) {
  j = json::object();
  for (const auto& [k, v] : c.values()) j[k] = v;
}
void from_json(const json& j, Config& c) {
  c = Config();
  for (auto it = j.begin(); it != j.end(); ++it) {
    // Numbers are accepted too ("batch_size": 64) so hand-written plans read naturally.
    c.set(it.key(), it->is_string() ? it->get<std::string>() : it->dump());
  }
}

void to_json(json& j, const TrialPlan& p) {
  j = json{{"schema", kPlanSchema}, {"config", p.config}};
  to_json(j, p.setup);
  if (!p.trace.empty()) {
    j["trace"] = p.trace;
    j["trace_steps"] = p.trace_steps;
  }
  if (p.noise.on)
    j["noise"] = {{"burn_in_seconds", p.noise.burn_in_seconds},
                  {"target_rel_se", p.noise.target_rel_se},
                  {"min_steps", p.noise.min_steps},
                  {"max_steps", p.noise.max_steps},
                  {"max_seconds", p.noise.max_seconds},
                  {"windows", p.noise.windows}};
  if (p.converge.on) {
    j["converge"] = {{"target_loss", p.converge.target_loss},
                     {"max_seconds", p.converge.max_seconds},
                     {"max_samples", p.converge.max_samples},
                     {"smooth_samples", p.converge.smooth_samples}};
    if (!p.converge.save_checkpoint.empty()) j["converge"]["save_checkpoint"] = p.converge.save_checkpoint;
    if (!p.converge.ramp.empty()) {
      json r = json::array();
      for (const auto& ph : p.converge.ramp) r.push_back({ph.from_samples, ph.grad_accum, ph.lr});
      j["converge"]["ramp"] = r;
    }
    if (p.converge.val_every > 0) {
      j["converge"]["val_every"] = p.converge.val_every;
      j["converge"]["val_samples"] = p.converge.val_samples;
      if (!p.converge.val_data.empty()) j["converge"]["val_data"] = p.converge.val_data;
      if (p.converge.val_needed) j["converge"]["val_needed"] = true;
    }
  }
  if (p.memory_probe.on) j["memory_probe"] = {{"steps", p.memory_probe.steps}};
}
namespace {

/// plan.converge.ramp: [[from_samples, grad_accum, lr], …], the first from 0, the samples rising.
std::vector<RampStep> ramp_from_json(const json& j) {
  std::vector<RampStep> out;
  if (!j.is_array()) throw std::runtime_error("converge.ramp: a list of [from_samples, grad_accum, lr]");
  for (const auto& x : j) {
    if (!x.is_array() || x.size() != 3 || !x[0].is_number_integer() || !x[1].is_number_integer() || !x[2].is_number())
      throw std::runtime_error("converge.ramp: each phase is [from_samples, grad_accum, lr]");
    RampStep ph{x[0].get<std::int64_t>(), x[1].get<int>(), x[2].get<double>()};
    const bool first = out.empty();
    if (ph.grad_accum < 1 || !(ph.lr > 0) || (first ? ph.from_samples != 0 : ph.from_samples <= out.back().from_samples))
      throw std::runtime_error(fmt::format("converge.ramp phase [{}, {}, {}] is out of range (the first from 0, samples rising, "
                                           "grad_accum ≥ 1, lr > 0)", ph.from_samples, ph.grad_accum, ph.lr));
    out.push_back(ph);
  }
  return out;
}

}  // namespace

void from_json(const json& j, TrialPlan& p) {
  check_schema(j, kPlanSchema);
  if (!j.contains("workload")) throw std::runtime_error("plan has no workload");
  from_json(j, p.setup);
  get_opt(j, "config", p.config);
  get_opt(j, "trace", p.trace);
  get_opt(j, "trace_steps", p.trace_steps);
  if (p.trace_steps < 1 || p.trace_steps > 1000)
    throw std::runtime_error(fmt::format("trace_steps {} is out of range; allowed: 1..1000", p.trace_steps));
  if (auto it = j.find("noise"); it != j.end() && it->is_object()) {
    NoisePlan& n = p.noise;
    n.on = true;
    get_opt(*it, "burn_in_seconds", n.burn_in_seconds);
    get_opt(*it, "target_rel_se", n.target_rel_se);
    get_opt(*it, "min_steps", n.min_steps);
    get_opt(*it, "max_steps", n.max_steps);
    get_opt(*it, "max_seconds", n.max_seconds);
    get_opt(*it, "windows", n.windows);
    if (!(n.target_rel_se > 0) || !(n.burn_in_seconds >= 0) || n.min_steps < 2 || n.max_steps < n.min_steps || !(n.max_seconds > 0) ||
        n.windows < 0 || n.windows > 8)
      throw std::runtime_error(fmt::format("noise plan out of range (target_rel_se {} > 0, 2 ≤ min_steps {} ≤ max_steps {}, "
                                           "max_seconds {} > 0, 0 ≤ windows {} ≤ 8)",
                                           n.target_rel_se, n.min_steps, n.max_steps, n.max_seconds, n.windows));
  }
  if (auto it = j.find("converge"); it != j.end() && it->is_object()) {
    ConvergePlan& c = p.converge;
    c.on = true;
    get_opt(*it, "target_loss", c.target_loss);
    get_opt(*it, "max_seconds", c.max_seconds);
    get_opt(*it, "max_samples", c.max_samples);
    get_opt(*it, "smooth_samples", c.smooth_samples);
    get_opt(*it, "save_checkpoint", c.save_checkpoint);
    if (auto r = it->find("ramp"); r != it->end()) c.ramp = ramp_from_json(*r);
    get_opt(*it, "val_every", c.val_every);
    get_opt(*it, "val_samples", c.val_samples);
    get_opt(*it, "val_data", c.val_data);
    get_opt(*it, "val_needed", c.val_needed);
    if (!(c.max_seconds > 0) || c.max_samples < 0 || c.smooth_samples < 1 || !(c.target_loss >= 0) || c.val_every < 0 ||
        c.val_samples < 1)
      throw std::runtime_error(fmt::format("converge plan out of range (max_seconds {} > 0, max_samples {} ≥ 0, smooth_samples "
                                           "{} ≥ 1, target_loss {} ≥ 0, val_every {} ≥ 0, val_samples {} ≥ 1)",
                                           c.max_seconds, c.max_samples, c.smooth_samples, c.target_loss, c.val_every,
                                           c.val_samples));
  }
  if (auto it = j.find("memory_probe"); it != j.end() && it->is_object()) {
    p.memory_probe.on = true;
    get_opt(*it, "steps", p.memory_probe.steps);
    if (p.memory_probe.steps < 2 || p.memory_probe.steps > 100)
      throw std::runtime_error(fmt::format("memory_probe.steps {} is out of range; allowed: 2..100", p.memory_probe.steps));
  }
  if (int(p.noise.on) + int(p.converge.on) + int(p.memory_probe.on) > 1)
    throw std::runtime_error("a plan is at most one of a noise-scale trial, a converge trial and a memory probe");
}

json curve_to_json(const std::vector<CurvePoint>& curve) {
  json pts = json::array();
  for (const auto& p : curve) pts.push_back(json::array({p.samples, p.seconds, finite_or_null(p.loss)}));
  return pts;
}

void to_json(json& j, const CompileRecord& c) {
  j = json{{"mode", c.mode},
           {"seconds", c.seconds},
           {"first_step_seconds", c.first_step_seconds},
           {"graphs", c.graphs},
           {"graph_breaks", c.graph_breaks},
           {"break_reasons", c.break_reasons},
           {"recompiles", c.recompiles},
           {"cache_hits", c.cache_hits},
           {"cache_misses", c.cache_misses}};
}

void from_json(const json& j, CompileRecord& c) {
  get_opt(j, "mode", c.mode);
  get_opt(j, "seconds", c.seconds);
  get_opt(j, "first_step_seconds", c.first_step_seconds);
  get_opt(j, "graphs", c.graphs);
  get_opt(j, "graph_breaks", c.graph_breaks);
  get_opt(j, "break_reasons", c.break_reasons);
  get_opt(j, "recompiles", c.recompiles);
  get_opt(j, "cache_hits", c.cache_hits);
  get_opt(j, "cache_misses", c.cache_misses);
  if (!(c.seconds >= 0) || c.graphs < 0 || c.graph_breaks < 0 || c.recompiles < 0)
    throw std::runtime_error("result: compile needs seconds, graphs, graph_breaks and recompiles ≥ 0");
}

void to_json(json& j, const TrialResult& r) {
  json windows = json::array();
  for (const auto& w : r.windows)
    windows.push_back({{"steps", w.steps}, {"samples", w.samples}, {"seconds", w.seconds}, {"samples_per_s", w.samples_per_s()}});
  json applied = json::array(), skipped = json::array();
  for (const auto& a : r.applied) applied.push_back({{"knob", a.knob}, {"requested", a.requested}, {"observed", a.observed}});
  for (const auto& s : r.skipped) skipped.push_back({{"knob", s.knob}, {"reason", s.reason}});
  const auto& b = r.breakdown;
  j = json{{"schema", kResultSchema},
           {"status", to_string(r.status)},
           {"message", r.message},
           {"workload", r.workload},
           {"config", r.config},
           {"device", r.device},
           {"batch_size", r.batch_size},
           {"warmup_steps", r.warmup_steps},
           {"warmup_seconds", r.warmup_seconds},
           {"windows", windows},
           {"losses", losses_to_json(r.losses)},
           {"warmup_losses", losses_to_json(r.warmup_losses)},
           {"non_finite_steps", r.non_finite_steps},
           {"scaler_skips", r.scaler_skips},
           {"flops_per_sample", r.flops_per_sample},
           {"memory",
            {{"peak_rss_bytes", r.peak_rss_bytes},
             {"peak_device_bytes", r.peak_device_bytes},
             {"device_total_bytes", r.device_total_bytes},
             {"host_total_bytes", r.host_total_bytes},
             {"alloc_retries", r.alloc_retries},
             {"host_malloc", r.host_malloc},
             {"minor_faults_per_step", r.minor_faults_per_step}}},
           {"breakdown_ms",
            {{"data", b.data_ms},
             {"h2d", b.h2d_ms},
             {"forward", b.forward_ms},
             {"backward", b.backward_ms},
             {"optimizer", b.optimizer_ms},
             {"other", b.other_ms}}},
           {"applied", applied},
           {"skipped", skipped},
           {"env", r.env},
           {"wall_seconds", r.wall_seconds}};
  if (!r.started.empty()) j["started"] = r.started;
  if (r.profile) j["profile"] = *r.profile;
  if (r.dist) j["dist"] = *r.dist;
  if (r.host_load)
    j["host_load"] = {{"other_cores", r.host_load->other_cores}, {"cpus", r.host_load->cpus}, {"seconds", r.host_load->seconds},
                      {"steal_cores", r.host_load->steal_cores}};
  if (r.device_holders)
    j["device_holders"] = {{"others", r.device_holders->others},
                           {"other_bytes", r.device_holders->other_bytes},
                           {"listed", r.device_holders->listed}};
  if (r.noise) {
    const NoiseRecord& n = *r.noise;
    json steps = json::array();
    for (const auto& s : n.steps) steps.push_back(json::array({finite_or_null(s.small_sq), finite_or_null(s.big_sq)}));
    j["noise"] = {{"micro_batch", n.micro_batch}, {"micro_batches", n.micro_batches}, {"steps", steps},
                  {"dropped", n.dropped},         {"stopped", n.stopped},             {"seconds", n.seconds},
                  {"weights", n.weights},         {"loss_first", n.loss_first},       {"loss_last", n.loss_last},
                  {"burn_in_seconds", n.burn_in_seconds}, {"burn_in_steps", n.burn_in_steps},
                  {"windows", n.windows},         {"first_window_end", n.first_window_end}};
  }
  if (r.memory) j["device_memory"] = *r.memory;
  if (r.placement) j["placement"] = *r.placement;
  if (r.compile) j["compile"] = *r.compile;
  if (!r.resolved.empty()) j["resolved"] = nlohmann::json::parse(r.resolved);
  if (r.converge) {
    const ConvergeRecord& c = *r.converge;
    j["converge"] = {{"points", curve_to_json(c.points)},
                     {"stopped", c.stopped},
                     {"lr", c.lr},
                     {"smooth_samples", c.smooth_samples},
                     {"checkpoint", c.checkpoint}};
    if (!c.switched_at.empty()) j["converge"]["switched_at"] = c.switched_at;
    if (!c.val_points.empty() || !c.val_source.empty()) {
      j["converge"]["val_points"] = curve_to_json(c.val_points);
      j["converge"]["val_samples"] = c.val_samples;
      j["converge"]["val_seconds"] = c.val_seconds;
      j["converge"]["val_source"] = c.val_source;
    }
  }
  if (!r.data.source.empty()) {
    const DataStats& d = r.data;
    json bad = json::object();
    for (const auto& [k, v] : d.bad_by_reason) bad[k] = v;
    j["data"] =
        {{"source", d.source},           {"dataset_size", d.dataset_size}, {"decode", d.decode},
         {"num_workers", d.num_workers}, {"prefetch", d.prefetch},         {"batches", d.batches},
         {"images_ok", d.images_ok},     {"images_bad", d.images_bad},     {"bad_by_reason", bad},
         {"bad_example", d.bad_example}, {"wait_seconds", d.wait_seconds}, {"worker_busy_seconds", d.worker_busy_seconds}};
  }
}

namespace {

/// result.noise: the noise-scale trial's record (knobs/noise_scale.h).
NoiseRecord noise_from_json(const json& j) {
  NoiseRecord n;
  get_opt(j, "micro_batch", n.micro_batch);
  get_opt(j, "micro_batches", n.micro_batches);
  get_opt(j, "dropped", n.dropped);
  get_opt(j, "stopped", n.stopped);
  get_opt(j, "seconds", n.seconds);
  get_opt(j, "weights", n.weights);
  get_opt(j, "loss_first", n.loss_first);
  get_opt(j, "loss_last", n.loss_last);
  get_opt(j, "burn_in_seconds", n.burn_in_seconds);
  get_opt(j, "burn_in_steps", n.burn_in_steps);
  get_opt(j, "windows", n.windows);
  get_opt(j, "first_window_end", n.first_window_end);
  if (auto s = j.find("steps"); s != j.end())
    for (const auto& x : *s) {
      if (!x.is_array() || x.size() != 2) throw std::runtime_error("noise.steps: each step is [small_sq, big_sq]");
      n.steps.push_back({number_or_nan(x[0]), number_or_nan(x[1])});
    }
  return n;
}

/// result.converge: the loss curve of a converge trial.
ConvergeRecord converge_from_json(const json& j) {
  ConvergeRecord c;
  get_opt(j, "stopped", c.stopped);
  get_opt(j, "lr", c.lr);
  get_opt(j, "smooth_samples", c.smooth_samples);
  get_opt(j, "checkpoint", c.checkpoint);
  get_opt(j, "switched_at", c.switched_at);
  auto curve = [&](const char* key, std::vector<CurvePoint>& out) {
    if (auto s = j.find(key); s != j.end())
      for (const auto& x : *s) {
        if (!x.is_array() || x.size() != 3)
          throw std::runtime_error(fmt::format("converge.{}: each point is [samples, seconds, loss]", key));
        out.push_back({json_number<std::int64_t>(x[0], "samples"), json_number<double>(x[1], "seconds"), number_or_nan(x[2])});
      }
  };
  curve("points", c.points);
  curve("val_points", c.val_points);
  get_opt(j, "val_samples", c.val_samples);
  get_opt(j, "val_seconds", c.val_seconds);
  get_opt(j, "val_source", c.val_source);
  return c;
}

/// result.data: what the trial read of the real data.
DataStats data_from_json(const json& d) {
  DataStats out;
  get_opt(d, "source", out.source);
  get_opt(d, "decode", out.decode);
  get_opt(d, "dataset_size", out.dataset_size);
  get_opt(d, "num_workers", out.num_workers);
  get_opt(d, "prefetch", out.prefetch);
  get_opt(d, "batches", out.batches);
  get_opt(d, "images_ok", out.images_ok);
  get_opt(d, "images_bad", out.images_bad);
  get_opt(d, "bad_example", out.bad_example);
  get_opt(d, "wait_seconds", out.wait_seconds);
  get_opt(d, "worker_busy_seconds", out.worker_busy_seconds);
  if (d.contains("bad_by_reason"))
    for (const auto& [k, v] : d.at("bad_by_reason").items())
      out.bad_by_reason.emplace_back(k, json_number<std::int64_t>(v, "bad_by_reason"));
  return out;
}

/// The object at `key` as a T, or none when absent (or not an object).
template <class T>
std::optional<T> object_at(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_object()) return std::nullopt;
  return it->get<T>();
}

}  // namespace

/// The Python worker's resolution (result.json `resolved`), kept as its JSON text; "" when absent.
static std::string resolved_text(const json& j) {
  if (!j.contains("resolved")) return "";
  if (!j["resolved"].is_object()) throw std::runtime_error("result: resolved must be an object");
  return j["resolved"].dump();
}

void from_json(const json& j, TrialResult& r) {
  check_schema(j, kResultSchema);
  r.status = trial_status_from_string(j.at("status").get<std::string>());
  get_opt(j, "message", r.message);
  get_opt(j, "workload", r.workload);
  get_opt(j, "config", r.config);
  get_opt(j, "device", r.device);
  get_opt(j, "batch_size", r.batch_size);
  get_opt(j, "warmup_steps", r.warmup_steps);
  get_opt(j, "warmup_seconds", r.warmup_seconds);
  r.windows.clear();
  if (j.contains("windows"))
    for (const auto& w : j.at("windows"))
      r.windows.push_back(Window{json_number<int>(w.at("steps"), "steps"), json_number<std::int64_t>(w.at("samples"), "samples"),
                                 w.at("seconds").get<double>()});
  r.losses = losses_from_json(j, "losses");
  r.warmup_losses = losses_from_json(j, "warmup_losses");
  get_opt(j, "non_finite_steps", r.non_finite_steps);
  get_opt(j, "scaler_skips", r.scaler_skips);
  get_opt(j, "flops_per_sample", r.flops_per_sample);
  if (j.contains("memory")) {
    const auto& m = j.at("memory");
    get_opt(m, "peak_rss_bytes", r.peak_rss_bytes);
    get_opt(m, "peak_device_bytes", r.peak_device_bytes);
    get_opt(m, "device_total_bytes", r.device_total_bytes);
    get_opt(m, "host_total_bytes", r.host_total_bytes);
    get_opt(m, "alloc_retries", r.alloc_retries);
    get_opt(m, "host_malloc", r.host_malloc);
    get_opt(m, "minor_faults_per_step", r.minor_faults_per_step);
  }
  if (j.contains("host_load")) {
    const auto& h = j.at("host_load");
    HostLoad l;
    get_opt(h, "other_cores", l.other_cores);
    get_opt(h, "steal_cores", l.steal_cores);  // of other_cores; absent before it was named
    get_opt(h, "cpus", l.cpus);
    get_opt(h, "seconds", l.seconds);
    if (!(l.other_cores >= 0) || l.cpus < 1) throw std::runtime_error("result: host_load needs other_cores ≥ 0 and cpus ≥ 1");
    r.host_load = l;
  }
  if (j.contains("device_holders")) {
    const auto& h = j.at("device_holders");
    DeviceHolders d;
    get_opt(h, "others", d.others);
    get_opt(h, "other_bytes", d.other_bytes);
    get_opt(h, "listed", d.listed);
    if (d.others < 0 || !(d.other_bytes >= 0)) throw std::runtime_error("result: device_holders needs others ≥ 0 and other_bytes ≥ 0");
    r.device_holders = d;
  }
  if (j.contains("breakdown_ms")) {
    const auto& b = j.at("breakdown_ms");
    get_opt(b, "data", r.breakdown.data_ms);
    get_opt(b, "h2d", r.breakdown.h2d_ms);
    get_opt(b, "forward", r.breakdown.forward_ms);
    get_opt(b, "backward", r.breakdown.backward_ms);
    get_opt(b, "optimizer", r.breakdown.optimizer_ms);
    get_opt(b, "other", r.breakdown.other_ms);
  }
  r.applied.clear();
  r.skipped.clear();
  if (j.contains("applied"))
    for (const auto& a : j.at("applied")) r.applied.push_back({a.at("knob"), a.at("requested"), a.at("observed")});
  if (j.contains("skipped"))
    for (const auto& s : j.at("skipped")) r.skipped.push_back({s.at("knob"), s.at("reason")});
  r.profile = object_at<ProfileSummary>(j, "profile");
  r.dist = object_at<DistInfo>(j, "dist");
  r.noise.reset();
  if (auto it = j.find("noise"); it != j.end() && it->is_object()) r.noise = noise_from_json(*it);
  r.memory = object_at<MemoryRecord>(j, "device_memory");
  r.placement = object_at<Placement>(j, "placement");
  r.compile = object_at<CompileRecord>(j, "compile");
  r.resolved = resolved_text(j);
  r.converge.reset();
  if (auto it = j.find("converge"); it != j.end() && it->is_object()) r.converge = converge_from_json(*it);
  r.data = DataStats{};
  if (j.contains("data")) r.data = data_from_json(j.at("data"));
  get_opt(j, "env", r.env);
  get_opt(j, "wall_seconds", r.wall_seconds);
  get_opt(j, "started", r.started);
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw std::runtime_error(fmt::format("{}: is a directory, not a file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open for reading", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool is_no_room(int err) { return err == ENOSPC || err == EDQUOT || err == EFBIG; }

void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  // Raw POSIX calls so a full disk is seen as such (errno), and the temporary file is synced before
  // the rename: after a crash or power loss `path` holds either its old or its new content, whole.
  auto fail = [&](const std::string& what, int err) {
    ::unlink(tmp.c_str());
    if (is_no_room(err)) throw DiskFull(path, std::strerror(err));
    throw std::runtime_error(fmt::format("{}: {}: {}", path, what, std::strerror(err)));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    if (is_no_room(err)) throw DiskFull(path, std::strerror(err));
    throw std::runtime_error(fmt::format("{}: cannot open for writing: {}", tmp, std::strerror(err)));
  }
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      ::close(fd);
      fail("write failed", err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail("fsync failed", err);
  }
  if (::close(fd) != 0) fail("close failed", errno);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename the temporary file into place", errno);
}

namespace {
template <class T>
T parse_json_file(const std::string& path) {
  const std::string text = read_file(path);
  try {
    return json::parse(text).get<T>();
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}: {}", path, json_error_text(e)));
  }
}
}  // namespace

TrialPlan read_plan(const std::string& path) { return parse_json_file<TrialPlan>(path); }
TrialResult read_result(const std::string& path) { return parse_json_file<TrialResult>(path); }
void write_plan(const TrialPlan& plan, const std::string& path) { write_file_atomic(path, json(plan).dump(2) + "\n"); }
void write_result(const TrialResult& r, const std::string& path) { write_file_atomic(path, json(r).dump(2) + "\n"); }

}  // namespace autotune
