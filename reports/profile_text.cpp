#include "reports/profile_text.h"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

namespace autotune {

ProfileText profile_text(const TracedProfile& tp) {
  ProfileText t;
  const auto p = nlohmann::json::parse(tp.json);
  t.title = fmt::format("Profile of the {} ({}, {} traced steps)", tp.label, p.value("mode", std::string()), p.value("steps", 0));
  if (!p.value("reason", std::string()).empty()) t.lines.push_back(p.value("reason", std::string()) + ".");
  const std::string file = tp.trace.empty() ? "" : "traces/" + std::filesystem::path(tp.trace).filename().string();
  t.lines.push_back(
      fmt::format("Step {:.2f} ms traced vs {:.2f} ms untraced (tracing inflation {:.2f}×). Trace: {} (Perfetto, HTA).",
                  p.value("traced_step_ms", 0.0), p.value("untraced_step_ms", 0.0), p.value("inflation", 0.0), file));
  if (!p.value("valid", false)) {
    t.lines.push_back("Not analysed: " + p.value("invalid_reason", std::string()));
    return t;
  }
  std::string phases;
  for (const auto& [k, v] : p.at("phase_ms").items())
    phases += fmt::format("{}{} {:.2f} ms", phases.empty() ? "" : ", ", k, v.get<double>());
  t.lines.push_back("Host time per step: " + phases + ".");
  if (p.contains("loader"))
    t.lines.push_back(fmt::format(
        "Loader: {} threads busy {:.0f}% of the traced steps; the training thread waited {:.2f} ms per step for batches.",
        p["loader"].value("num_workers", 0), 100 * p["loader"].value("utilisation", 0.0),
        p["loader"].value("wait_ms_per_step", 0.0)));
  if (p.contains("gpu_phase_ms") && !p.at("gpu_phase_ms").empty()) {
    std::string g;
    for (const auto& [k, v] : p.at("gpu_phase_ms").items())
      g += fmt::format("{}{} {:.2f} ms", g.empty() ? "" : ", ", k, v.get<double>());
    t.lines.push_back("GPU time per step by the phase that launched it: " + g + ".");
  }
  if (p.value("gpu", false)) {
    const auto& idle = p.at("idle");
    t.lines.push_back(fmt::format(
        "GPU busy {:.0f}%; idle waiting for the host {:.0f}%, between kernels {:.0f}%, other {:.0f}%; {:.1f} kernels per step, median "
        "launch delay {:.1f} µs, {:.0f}% of kernels shorter than their launch; {:.2f} synchronisations per step{}.",
        100 * p.value("busy_share", 0.0), 100 * idle.value("host_wait", 0.0), 100 * idle.value("kernel_wait", 0.0),
        100 * idle.value("other", 0.0), p.value("kernels_per_step", 0.0), p.value("launch_delay_us", 0.0),
        100 * p.value("short_kernel_share", 0.0), p.value("syncs_per_step", 0.0),
        p.value("mfu", -1.0) >= 0
            ? fmt::format("; MFU {:.1f}% ({})", 100 * p.value("mfu", 0.0), p.value("peak_basis", std::string()))
            : "; MFU unknown (" + p.value("peak_basis", std::string()) + ")"));
    for (const auto& x : p.at("syncs"))
      t.lines.push_back(fmt::format("Sync: {} — {:.2f} per step.", x.value("what", std::string()), x.value("per_step", 0.0)));
    for (const auto& c : p.at("copies"))
      t.lines.push_back(fmt::format("Copy {}: {} bytes in {} copies, {:.1f} GB/s.", c.value("kind", std::string()),
                                    c.value("bytes", 0LL), c.value("count", 0LL), c.value("gb_per_s", 0.0)));
    int n = 0;
    for (const auto& k : p.at("top_kernels"))
      if (n++ < 5)
        t.kernels.push_back({k.value("name", std::string()).substr(0, 100), std::to_string(k.value("count", 0)),
                             fmt::format("{:.2f} ms", k.value("total_ms", 0.0)),
                             fmt::format("{:.0f}%", 100 * k.value("share", 0.0))});
  }
  t.lines.push_back(
      fmt::format("Verdict: {} — {}.", p.value("verdict", std::string()), p.value("verdict_detail", std::string())));
  return t;
}

}  // namespace autotune
