#include "reports/profile_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace autotune {

namespace {

/// "data 1.00 ms, forward 3.00 ms": per-step times by phase.
std::string phase_list(const std::map<std::string, double>& ms) {
  std::string s;
  for (const auto& [k, v] : ms) s += fmt::format("{}{} {:.2f} ms", s.empty() ? "" : ", ", k, v);
  return s;
}

/// The GPU sentences: busy/idle split, launches, syncs, copies, MFU, and the top kernels.
void gpu_lines(const ProfileSummary& p, ProfileText& t) {
  t.lines.push_back(fmt::format(
      "GPU busy {:.0f}%; idle waiting for the host {:.0f}%, between kernels {:.0f}%, other {:.0f}%; {:.1f} kernels per step, median "
      "launch delay {:.1f} µs, {:.0f}% of kernels shorter than their launch; {:.2f} synchronisations per step{}.",
      100 * p.busy_share, 100 * p.host_wait_share, 100 * p.kernel_wait_share, 100 * p.other_idle_share, p.kernels_per_step,
      p.launch_delay_us, 100 * p.short_kernel_share, p.syncs_per_step,
      p.mfu >= 0 ? fmt::format("; MFU {:.1f}% ({})", 100 * p.mfu, p.peak_basis) : "; MFU unknown (" + p.peak_basis + ")"));
  for (const auto& x : p.syncs) t.lines.push_back(fmt::format("Sync: {} — {:.2f} per step.", x.what, x.per_step));
  for (const auto& c : p.copies)
    t.lines.push_back(fmt::format("Copy {}: {} bytes in {} copies, {:.1f} GB/s.", c.kind, c.bytes, c.count, c.gb_per_s));
  if (!p.kernel_classes.empty()) {
    std::string kinds;
    for (const auto& c : p.kernel_classes)
      if (c.share >= 0.01)
        kinds += fmt::format("{}{} {:.0f}% ({:.2f} ms)", kinds.empty() ? "" : ", ", c.name, 100 * c.share, c.ms_per_step);
    t.lines.push_back("Kernel time per step by kind: " + kinds + ".");
  }
  for (size_t i = 0; i < p.top_kernels.size() && i < 5; ++i) {
    const KernelStat& k = p.top_kernels[i];
    std::vector<std::pair<std::string, double>> phases(k.phases.begin(), k.phases.end());
    std::sort(phases.begin(), phases.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string from;
    for (const auto& [ph, share] : phases) from += fmt::format("{}{} {:.0f}%", from.empty() ? "" : ", ", ph, 100 * share);
    std::string geometry = "—";
    if (k.grid[0] > 0)
      geometry = fmt::format("{}×{}×{} × {}×{}×{}{}", k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2],
                             k.geometries > 1 ? fmt::format(" (+{} other{})", k.geometries - 1, k.geometries > 2 ? "s" : "") : "");
    t.kernels.push_back({k.name.substr(0, 100), std::to_string(k.count), fmt::format("{:.1f} µs", k.mean_us),
                         fmt::format("{:.2f} ms", k.total_ms), fmt::format("{:.0f}%", 100 * k.share),
                         from.empty() ? "—" : from, geometry});
  }
}

}  // namespace

ProfileText profile_text(const ProfileSummary& p, const std::string& label, const std::string& trace) {
  ProfileText t;
  t.title = fmt::format("Profile of the {} ({}, {} traced steps)", label, p.mode, p.steps);
  if (!p.reason.empty()) t.reason = p.reason + ".";
  t.lines.push_back(
      fmt::format("Step {:.2f} ms traced vs {:.2f} ms untraced (tracing inflation {:.2f}×). Trace: {} (Perfetto, HTA).",
                  p.traced_step_ms, p.untraced_step_ms, p.inflation, trace));
  if (!p.valid) {
    t.lines.push_back("Not analysed: " + p.invalid_reason);
    return t;
  }
  t.lines.push_back("Host time per step: " + phase_list(p.phase_ms) + ".");
  if (p.loader)
    t.lines.push_back(fmt::format(
        "Loader: {} threads busy {:.0f}% of the traced steps; the training thread waited {:.2f} ms per step for batches.",
        p.loader->num_workers, 100 * p.loader->utilisation, p.loader->wait_ms_per_step));
  if (p.comm)
    t.lines.push_back(fmt::format(
        "Communication ({}): {:.1f} collectives{} per step, {:.2f} ms per step, {:.0f}% of it hidden behind compute ({:.2f} ms "
        "exposed).",
        p.comm->source, p.comm->calls_per_step, p.comm->mb_per_step > 0 ? fmt::format(" and {:.2f} MB", p.comm->mb_per_step) : "",
        p.comm->ms_per_step, 100 * p.comm->hidden_share, p.comm->exposed_ms_per_step));
  if (!p.gpu_phase_ms.empty())
    t.lines.push_back("GPU time per step by the phase that launched it: " + phase_list(p.gpu_phase_ms) + ".");
  if (p.gpu) gpu_lines(p, t);
  t.lines.push_back(fmt::format("Verdict: {} — {}.", p.verdict, p.verdict_detail));
  return t;
}

ProfileText profile_text(const TracedProfile& tp) {
  // traces/<label>.json, or for ranks > 1 traces/<label>/rank0.json beside the other ranks' files.
  std::string rel;
  if (!tp.trace.empty()) {
    const std::filesystem::path t(tp.trace);
    const std::string folder = t.parent_path().filename().string();
    rel = folder == "traces" || folder.empty()
              ? "traces/" + t.filename().string()
              : "traces/" + folder + "/" + t.filename().string() + ", one per rank in traces/" + folder + "/";
  }
  return profile_text(tp.profile, tp.label, rel);
}

}  // namespace autotune
