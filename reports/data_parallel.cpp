#include "reports/data_parallel.h"

#include <fmt/format.h>

#include <algorithm>

#include "knobs/knob.h"

namespace autotune {

namespace {

/// Knobs that mean nothing in one process: ranks itself and the ones a config with ranks=1 ignores
/// (Knob::needs_ranks, knobs/resolve.cpp).
bool ddp_only(const std::string& knob) {
  if (knob == "ranks") return true;
  for (const Knob& k : knob_catalog())
    if (k.name == knob) return k.needs_ranks;
  return false;
}

/// The config with every data-parallel knob removed: what it is in one process.
Config one_process(const Config& c) {
  Config o;
  for (const auto& [k, v] : c.values())
    if (!ddp_only(k)) o.set(k, v);
  return o;
}

}  // namespace

std::string comm_cell(const DataParallelRow& r) {
  return r.comm_timed ? fmt::format("{:.1f} ms", r.comm_ms_per_step) : "not timed on the host (NCCL): see the profile's NCCL kernels";
}
std::string hidden_cell(const DataParallelRow& r) { return r.comm_timed ? fmt::format("{:.0f}%", 100 * r.hidden_share) : "–"; }

std::vector<DataParallelRow> data_parallel_rows(const RunSummary& s) {
  std::vector<DataParallelRow> rows;
  const ConfigSummary* base = s.baseline >= 0 ? &s.configs[static_cast<size_t>(s.baseline)] : nullptr;
  for (const auto& c : s.configs) {
    if (!c.dist || c.status != TrialStatus::ok || c.dist->ranks.empty()) continue;
    DataParallelRow r;
    r.config = base ? c.config.diff_key(base->config) : c.config.key();
    r.ranks = c.dist->world;
    r.backend = c.dist->backend;
    r.samples_per_s = c.median;
    for (const auto& k : c.dist->ranks) {
      r.step_ms = std::max(r.step_ms, k.step_ms);
      r.collectives_per_step = std::max(r.collectives_per_step, k.collectives_per_step);
      r.mb_per_step = std::max(r.mb_per_step, k.comm_bytes_per_step / 1e6);
    }
    r.comm_ms_per_step = c.dist->comm_ms_per_step();
    r.hidden_share = c.dist->overlap_share();
    r.comm_timed = c.dist->comm_timed();
    std::string sizes;
    for (size_t i = 0; i < c.dist->bucket_bytes.size() && i < 4; ++i)
      sizes += fmt::format("{}{:.1f}", i ? ", " : "", c.dist->bucket_bytes[i] / double(1 << 20));
    if (c.dist->bucket_bytes.size() > 4) sizes += ", …";
    r.buckets = fmt::format("{} ({} MiB)", c.dist->bucket_bytes.size(), sizes);
    const Config solo = one_process(c.config);
    for (const auto& o : s.configs) {
      if (o.dist || o.status != TrialStatus::ok || one_process(o.config) != solo) continue;
      if (o.median > 0) {
        r.scaling_efficiency = c.median / (r.ranks * o.median);
        r.one_rank_config = base ? o.config.diff_key(base->config) : o.config.key();
      }
      break;
    }
    rows.push_back(r);
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.samples_per_s > b.samples_per_s; });
  return rows;
}

}  // namespace autotune
