#include "knobs/resolve.h"

#include <fmt/format.h>

#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

#include "knobs/knob.h"

namespace autotune {

namespace {

template <class T>
void parse_into(const std::string& text, T& out) {
  if constexpr (std::is_same_v<T, std::string>) out = text;
  else if constexpr (std::is_same_v<T, bool>) out = text == "true" || text == "on";
  else out = static_cast<T>(std::stoll(text));  // validated by the catalog: an integer in range
}

/// Sets the member of `s` called `knob` from its string value.
void assign(Settings& s, const std::string& knob, const std::string& value) {
  Settings::visit(
      [&](const char* name, auto& member) {
        if (knob == name) parse_into(value, member);
      },
      s);
}

/// A value one knob may take only when others allow it. `why_not` says what is missing ("" = allowed).
/// The knob then falls back to its baseline. The worker relies on these: a captured CUDA graph cannot
/// replay host-side RNG or the GradScaler's host logic, and the GPU augmentation crops fixed-size images.
struct Rule {
  const char* knob;
  const char* value;  ///< nullptr: any value other than the knob's baseline
  std::string (*why_not)(const Settings&, const TargetInfo&);
};

std::string needs_ranks(const Settings& s, const TargetInfo&) {
  return s.ranks > 1 ? "" : "only with ranks > 1 (one process has no gradient communication)";
}

const Rule kRules[] = {
    {"augment_device", "gpu",
     [](const Settings& s, const TargetInfo&) -> std::string {
       if (s.decode != "cache")
         return "needs decode=cache (the GPU crops the cache's fixed-size images; JPEG files differ in size)";
       return "";
     }},
    {"cuda_graphs", "on",
     [](const Settings& s, const TargetInfo&) -> std::string {
       if (s.optimizer_impl != "fused") return "needs optimizer_impl=fused (its step counters live on the device)";
       if (s.checkpointing != "none") return "checkpointing replays RNG state from the host, which a graph cannot";
       if (s.precision == "amp_fp16") return "the fp16 GradScaler is not captured (use amp_bf16, which needs no scaler)";
       if (s.grad_accum > 1) return "grad_accum > 1 is not captured (one micro-batch per replay)";
       if (s.ranks > 1)
         return "not with ranks > 1: the Reducer's per-bucket autograd hooks and collectives are host-driven and "
                "not captured";
       if (s.compile != "off") return "torch.compile captures its own graphs (mode reduce-overhead); one capture, not two";
       return "";
     }},
    // PyTorch's Python DDP constructor, not the Reducer the C++ worker builds: once bucket_cap_mb is given, the first
    // bucket is capped at it too (torch/nn/parallel/distributed.py), so a first bucket of its own means nothing.
    {"first_bucket_mb", nullptr,
     [](const Settings& s, const TargetInfo& t) -> std::string {
       if (t.python_trainer && s.ranks > 1 && s.bucket_mb != 25)  // with one rank it falls back for that (below)
         return "PyTorch's DDP caps the first bucket at bucket_cap_mb once bucket_cap_mb is given (bucket_mb ≠ 25)";
       return "";
     }},
};

}  // namespace

Resolution resolve(const Config& config, const WorkloadInfo& workload, const TargetInfo& target) {
  Resolution r;
  r.effective = config;
  const std::string default_batch = std::to_string(workload.default_batch_size);
  // A value that cannot be used runs as the baseline; a knob that does not apply here at all leaves
  // the effective config (it has no meaning on this target), so resolving that again skips nothing.
  auto fall_back = [&](const std::string& knob, const std::string& value, const std::string& why, const std::string& base) {
    r.skipped.push_back({knob, fmt::format("{}={}: {}; ran with {}", knob, value, why, base)});
    if (find_knob(knob).not_applicable(target)) r.effective.erase(knob);
    else r.effective.set(knob, base);
    assign(r.settings, knob, base);
  };
  // 1. Each knob on its own: its value, or its baseline when it (or this value) does not apply here.
  Settings::visit(
      [&](const char* name, auto& member) {
        const Knob& k = find_knob(name);
        const std::string base = target.default_of(k, k.default_value == "workload" ? default_batch : "");
        parse_into(base, member);
        if (!config.has(name)) return;
        const std::string v = config.get(name);
        if (auto why = k.value_not_applicable(v, target)) return fall_back(name, v, *why, base);
        parse_into(v, member);
      },
      r.settings);
  // 2. Values other knobs rule out: the rules above, then every data-parallel knob (Knob::needs_ranks).
  std::vector<Rule> rules(std::begin(kRules), std::end(kRules));
  for (const Knob& k : knob_catalog())
    if (k.needs_ranks) rules.push_back({k.name.c_str(), nullptr, needs_ranks});
  for (const Rule& rule : rules) {
    const Knob& k = find_knob(rule.knob);
    const std::string v = config.get(rule.knob);
    if (!config.has(rule.knob) || r.effective.get(rule.knob) != v) continue;  // unset, or fell back already
    if (rule.value ? v != rule.value : v == target.default_of(k)) continue;
    if (const std::string why = rule.why_not(r.settings, target); !why.empty()) fall_back(rule.knob, v, why, target.default_of(k));
  }
  return r;
}

std::vector<std::string> applicable_knobs(const TargetInfo& target) {
  std::vector<std::string> out;
  for (const Knob& k : knob_catalog()) {
    if (k.not_applicable(target)) continue;
    const std::string base = target.default_of(k);
    for (const auto& v : k.values)
      if (v != base && !k.value_not_applicable(v, target)) {
        out.push_back(k.name);
        break;
      }
  }
  return out;
}

KnobSpace applicable_space(const KnobSpace& space, const TargetInfo& target, std::vector<SkippedKnob>& skipped) {
  KnobSpace out;
  for (const auto& [k, vs] : space.axes()) {
    const Knob& knob = find_knob(k);
    if (auto why = knob.not_applicable(target)) {
      skipped.push_back({k, *why});
      continue;
    }
    std::vector<std::string> usable;
    for (const auto& v : vs) {
      if (auto why = knob.value_not_applicable(v, target)) skipped.push_back({k + "=" + v, *why});
      else usable.push_back(v);
    }
    if (!usable.empty()) out.add(k, usable);
  }
  return out;
}

}  // namespace autotune
