#include "reports/check_summary.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "knobs/json_get.h"
#include "knobs/protocol.h"

namespace autotune {

using nlohmann::json;

void to_json(json& j, const MetricDecision& m) {
  j = json{{"name", m.name},
           {"unit", m.unit},
           {"higher_is_better", m.higher_is_better},
           {"n_a", m.n_a},
           {"n_b", m.n_b},
           {"median_a", m.median_a},
           {"median_b", m.median_b},
           {"ratio", m.ratio},
           {"ratio_ci95", {m.ratio_lo, m.ratio_hi}},
           {"cv_a", m.cv_a},
           {"cv_b", m.cv_b},
           {"p", m.p},
           {"p_holm", m.p_holm},
           {"floor", m.floor},
           {"verdict", m.verdict},
           {"reason", m.reason},
           {"reps_needed", m.reps_needed}};
}

void from_json(const json& j, MetricDecision& m) {
  get_opt(j, "name", m.name);
  get_opt(j, "unit", m.unit);
  get_opt(j, "higher_is_better", m.higher_is_better);
  get_opt(j, "n_a", m.n_a);
  get_opt(j, "n_b", m.n_b);
  get_opt(j, "median_a", m.median_a);
  get_opt(j, "median_b", m.median_b);
  get_opt(j, "ratio", m.ratio);
  if (auto it = j.find("ratio_ci95"); it != j.end() && it->size() == 2) {
    m.ratio_lo = (*it)[0];
    m.ratio_hi = (*it)[1];
  }
  get_opt(j, "cv_a", m.cv_a);
  get_opt(j, "cv_b", m.cv_b);
  get_opt(j, "p", m.p);
  get_opt(j, "p_holm", m.p_holm);
  get_opt(j, "floor", m.floor);
  get_opt(j, "verdict", m.verdict);
  get_opt(j, "reason", m.reason);
  get_opt(j, "reps_needed", m.reps_needed);
}

namespace {

json side_json(const CheckSide& s) {
  json reps = json::array();
  for (const auto& r : s.reps)
    reps.push_back({{"index", r.index},
                    {"order", r.order},
                    {"status", r.status},
                    {"message", r.message},
                    {"throughput", r.throughput},
                    {"windows", r.windows},
                    {"peak_bytes", r.peak_bytes},
                    {"trial_dir", r.trial_dir},
                    {"other_cores", r.other_cores},
                    {"busy", r.busy},
                    {"cpus", r.cpus}});
  return {{"name", s.name},     {"source", s.source}, {"workload", s.workload}, {"model", s.model}, {"config", s.config},
          {"worker", s.worker}, {"stored", s.stored}, {"default_batch", s.default_batch}, {"env", s.env},           {"reps", reps}};
}

CheckSide side_from_json(const json& j) {
  CheckSide s;
  get_opt(j, "name", s.name);
  get_opt(j, "source", s.source);
  get_opt(j, "workload", s.workload);
  get_opt(j, "model", s.model);
  get_opt(j, "default_batch", s.default_batch);
  get_opt(j, "config", s.config);
  get_opt(j, "worker", s.worker);
  get_opt(j, "stored", s.stored);
  get_opt(j, "env", s.env);
  if (auto it = j.find("reps"); it != j.end())
    for (const auto& r : *it) {
      CheckRep c;
      get_opt(r, "index", c.index);
      get_opt(r, "order", c.order);
      get_opt(r, "status", c.status);
      get_opt(r, "message", c.message);
      get_opt(r, "throughput", c.throughput);
      get_opt(r, "windows", c.windows);
      get_opt(r, "peak_bytes", c.peak_bytes);
      get_opt(r, "trial_dir", c.trial_dir);
      get_opt(r, "other_cores", c.other_cores);
      get_opt(r, "busy", c.busy);
      get_opt(r, "cpus", c.cpus);
      s.reps.push_back(c);
    }
  return s;
}

}  // namespace

void to_json(json& j, const CheckSummary& s) {
  j = json{{"schema", kCheckSchema},
           {"verdict", s.verdict},
           {"reason", s.reason},
           {"a", side_json(s.a)},
           {"b", side_json(s.b)},
           {"reps", s.reps},
           {"order_seed", s.order_seed},
           {"order", s.order},
           {"thresholds", {{"alpha", s.alpha}, {"floor", s.floor}, {"memory_floor", s.memory_floor}, {"min_reps", s.min_reps}}},
           {"metrics", s.metrics},
           {"started_at", s.started_at},
           {"finished_at", s.finished_at},
           {"elapsed_seconds", s.elapsed_seconds},
           {"interrupted_by", s.interrupted_by}};
}

void from_json(const json& j, CheckSummary& s) {
  if (j.value("schema", std::string()) != kCheckSchema)
    throw std::runtime_error("schema '" + j.value("schema", std::string()) + "' is not supported; expected '" + kCheckSchema +
                             "'");
  s = CheckSummary{};
  get_opt(j, "verdict", s.verdict);
  get_opt(j, "reason", s.reason);
  s.a = side_from_json(j.at("a"));
  s.b = side_from_json(j.at("b"));
  get_opt(j, "reps", s.reps);
  get_opt(j, "order_seed", s.order_seed);
  get_opt(j, "order", s.order);
  if (auto t = j.find("thresholds"); t != j.end()) {
    get_opt(*t, "alpha", s.alpha);
    get_opt(*t, "floor", s.floor);
    get_opt(*t, "memory_floor", s.memory_floor);
    get_opt(*t, "min_reps", s.min_reps);
  }
  get_opt(j, "metrics", s.metrics);
  get_opt(j, "started_at", s.started_at);
  get_opt(j, "finished_at", s.finished_at);
  get_opt(j, "elapsed_seconds", s.elapsed_seconds);
  get_opt(j, "interrupted_by", s.interrupted_by);
}

}  // namespace autotune
