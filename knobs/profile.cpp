#include "knobs/profile.h"

#include <nlohmann/json.hpp>

#include "knobs/json_get.h"

namespace autotune {

using nlohmann::json;

namespace {

/// A launch geometry [x, y, z]; each a number that fits an int32 (json_number), absent or null = 0s.
void get_dims(const json& j, const char* key, std::array<std::int32_t, 3>& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  if (!it->is_array() || it->size() != 3)
    throw std::runtime_error(std::string("'") + key + "' must be an array of 3 integers, got " + it->dump());
  for (size_t d = 0; d < 3; ++d) out[d] = json_number<std::int32_t>((*it)[d], key);
}

}  // namespace

void to_json(json& j, const ProfileSummary& p) {
  json kernels = json::array(), classes = json::array(), syncs = json::array(), copies = json::array();
  for (const auto& k : p.top_kernels)
    kernels.push_back({{"name", k.name},
                       {"count", k.count},
                       {"total_ms", k.total_ms},
                       {"share", k.share},
                       {"mean_us", k.mean_us},
                       {"grid", k.grid},
                       {"block", k.block},
                       {"geometries", k.geometries},
                       {"threads_per_call", k.threads_per_call},
                       {"phases", k.phases}});
  for (const auto& k : p.kernel_classes)
    classes.push_back({{"name", k.name}, {"per_step", k.per_step}, {"ms_per_step", k.ms_per_step}, {"share", k.share}});
  for (const auto& x : p.syncs) syncs.push_back({{"what", x.what}, {"count", x.count}, {"per_step", x.per_step}});
  for (const auto& c : p.copies)
    copies.push_back({{"kind", c.kind}, {"count", c.count}, {"bytes", c.bytes}, {"ms", c.ms}, {"gb_per_s", c.gb_per_s}});
  j = json{{"mode", p.mode},
           {"reason", p.reason},
           {"untraced_step_ms", p.untraced_step_ms},
           {"traced_step_ms", p.traced_step_ms},
           {"inflation", p.inflation},
           {"trace", p.trace},
           {"valid", p.valid},
           {"invalid_reason", p.invalid_reason},
           {"gpu", p.gpu},
           {"steps", p.steps},
           {"step_ms", p.step_ms},
           {"busy_share", p.busy_share},
           {"idle", {{"host_wait", p.host_wait_share}, {"kernel_wait", p.kernel_wait_share}, {"other", p.other_idle_share}}},
           {"kernels_per_step", p.kernels_per_step},
           {"launch_delay_us", p.launch_delay_us},
           {"short_kernel_share", p.short_kernel_share},
           {"top_kernels", kernels},
           {"kernel_classes", classes},
           {"syncs", syncs},
           {"syncs_per_step", p.syncs_per_step},
           {"copies", copies},
           {"phase_ms", p.phase_ms},
           {"gpu_phase_ms", p.gpu_phase_ms},
           {"mfu", p.mfu},
           {"peak_tflops", p.peak_tflops},
           {"peak_basis", p.peak_basis},
           {"verdict", p.verdict},
           {"verdict_detail", p.verdict_detail},
           {"verdict_knobs", p.verdict_knobs}};
  if (p.comm)
    j["comm"] = {{"source", p.comm->source},
                 {"calls_per_step", p.comm->calls_per_step},
                 {"ms_per_step", p.comm->ms_per_step},
                 {"hidden_share", p.comm->hidden_share},
                 {"exposed_ms_per_step", p.comm->exposed_ms_per_step},
                 {"mb_per_step", p.comm->mb_per_step}};
  if (p.loader)
    j["loader"] = {{"num_workers", p.loader->num_workers},
                   {"utilisation", p.loader->utilisation},
                   {"wait_ms_per_step", p.loader->wait_ms_per_step}};
}

void from_json(const json& j, ProfileSummary& p) {
  p = ProfileSummary{};
  get_opt(j, "mode", p.mode);
  get_opt(j, "reason", p.reason);
  get_opt(j, "untraced_step_ms", p.untraced_step_ms);
  get_opt(j, "traced_step_ms", p.traced_step_ms);
  get_opt(j, "inflation", p.inflation);
  get_opt(j, "trace", p.trace);
  if (auto l = j.find("loader"); l != j.end() && l->is_object()) {
    LoaderProfile lp;
    get_opt(*l, "num_workers", lp.num_workers);
    get_opt(*l, "utilisation", lp.utilisation);
    get_opt(*l, "wait_ms_per_step", lp.wait_ms_per_step);
    p.loader = lp;
  }
  if (auto c = j.find("comm"); c != j.end() && c->is_object()) {
    CommProfile cp;
    get_opt(*c, "source", cp.source);
    get_opt(*c, "calls_per_step", cp.calls_per_step);
    get_opt(*c, "ms_per_step", cp.ms_per_step);
    get_opt(*c, "hidden_share", cp.hidden_share);
    get_opt(*c, "exposed_ms_per_step", cp.exposed_ms_per_step);
    get_opt(*c, "mb_per_step", cp.mb_per_step);
    p.comm = cp;
  }
  get_opt(j, "valid", p.valid);
  get_opt(j, "invalid_reason", p.invalid_reason);
  get_opt(j, "gpu", p.gpu);
  get_opt(j, "steps", p.steps);
  get_opt(j, "step_ms", p.step_ms);
  get_opt(j, "busy_share", p.busy_share);
  if (auto idle = j.find("idle"); idle != j.end() && idle->is_object()) {
    get_opt(*idle, "host_wait", p.host_wait_share);
    get_opt(*idle, "kernel_wait", p.kernel_wait_share);
    get_opt(*idle, "other", p.other_idle_share);
  }
  get_opt(j, "kernels_per_step", p.kernels_per_step);
  get_opt(j, "launch_delay_us", p.launch_delay_us);
  get_opt(j, "short_kernel_share", p.short_kernel_share);
  if (auto a = j.find("top_kernels"); a != j.end() && a->is_array())
    for (const auto& k : *a) {
      KernelStat t;
      t.name = k.value("name", "");
      t.count = get_or<std::int64_t>(k, "count", 0);
      t.total_ms = k.value("total_ms", 0.0);
      t.share = k.value("share", 0.0);
      get_opt(k, "mean_us", t.mean_us);  // the fields below: profiles since 2026-11-25
      get_dims(k, "grid", t.grid);
      get_dims(k, "block", t.block);
      get_opt(k, "geometries", t.geometries);
      get_opt(k, "threads_per_call", t.threads_per_call);
      get_opt(k, "phases", t.phases);
      p.top_kernels.push_back(t);
    }
  if (auto a = j.find("kernel_classes"); a != j.end() && a->is_array())
    for (const auto& k : *a)
      p.kernel_classes.push_back(
          {k.value("name", ""), k.value("per_step", 0.0), k.value("ms_per_step", 0.0), k.value("share", 0.0)});
  if (auto a = j.find("syncs"); a != j.end() && a->is_array())
    for (const auto& x : *a)
      p.syncs.push_back({x.value("what", ""), get_or<std::int64_t>(x, "count", 0), x.value("per_step", 0.0)});
  get_opt(j, "syncs_per_step", p.syncs_per_step);
  if (auto a = j.find("copies"); a != j.end() && a->is_array())
    for (const auto& c : *a)
      p.copies.push_back({c.value("kind", ""), get_or<std::int64_t>(c, "count", 0), get_or<std::int64_t>(c, "bytes", 0),
                          c.value("ms", 0.0), c.value("gb_per_s", 0.0)});
  get_opt(j, "phase_ms", p.phase_ms);
  get_opt(j, "gpu_phase_ms", p.gpu_phase_ms);
  get_opt(j, "mfu", p.mfu);
  get_opt(j, "peak_tflops", p.peak_tflops);
  get_opt(j, "peak_basis", p.peak_basis);
  get_opt(j, "verdict", p.verdict);
  get_opt(j, "verdict_detail", p.verdict_detail);
  get_opt(j, "verdict_knobs", p.verdict_knobs);
}

}  // namespace autotune
