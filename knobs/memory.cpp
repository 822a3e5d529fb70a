#include "knobs/memory.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

#include "knobs/error.h"
#include "knobs/json_get.h"
#include "knobs/protocol.h"

namespace autotune {

std::int64_t MemoryRecord::param_elements() const {
  std::int64_t n = 0;
  for (std::int64_t e : param_numels) n += e;
  return n;
}

namespace {
std::int64_t rounded(std::int64_t bytes, std::int64_t round) {
  if (round <= 1) return bytes;
  return (bytes + round - 1) / round * round;
}
}  // namespace

StateBytes analytic_states(const std::vector<std::int64_t>& numels, int elem_bytes, const std::string& optimizer_impl, int ranks,
                           bool gradient_as_bucket_view, std::int64_t round) {
  StateBytes s;
  std::int64_t flat = 0;
  for (std::int64_t n : numels) {
    const std::int64_t b = rounded(n * elem_bytes, round);
    s.params += b;
    s.grads += b;
    s.optimizer += 2 * b;  // AdamW's exp_avg and exp_avg_sq, shaped as the parameter
    if (optimizer_impl == "foreach" || optimizer_impl == "fused") s.optimizer += rounded(4, round);  // float32 step counter
    flat += n * elem_bytes;
  }
  // A bucket is one flat tensor holding many gradients; all buckets together hold every gradient once.
  // With gradient_as_bucket_view the gradients are views into it (counted as the gradients), else a copy.
  if (ranks > 1 && !gradient_as_bucket_view) s.buckets = rounded(flat, round);
  return s;
}

std::int64_t parse_size(const std::string& text, const std::string& what) {
  const auto bad = [&] {
    return UsageError(fmt::format("{}'{}' is not a size; allowed: a positive number of bytes with an optional suffix K, M, G "
                                  "or T (powers of 1024; KiB, MB, … also read so), e.g. 512M or 1.5G",
                                  what.empty() ? "" : what + " ", text));
  };
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) throw bad();
  double v = 0;
  try {
    std::size_t used = 0;
    v = std::stod(text.substr(0, i), &used);
    if (used != i) throw bad();
  } catch (const std::logic_error&) {
    throw bad();
  }
  std::string unit = text.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.erase(unit.begin());
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double mult = 0;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB") mult = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB") mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB") mult = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TB" || unit == "TIB") mult = 1024.0 * 1024 * 1024 * 1024;
  else throw bad();
  const double bytes = v * mult;
  if (!(bytes >= 1) || bytes > 9.0e18) throw bad();
  return static_cast<std::int64_t>(std::llround(bytes));
}

std::string format_bytes(std::int64_t b) {
  const double a = std::abs(static_cast<double>(b));
  if (a >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  if (a >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  if (a >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

void to_json(nlohmann::json& j, const MemoryRecord& m) {
  j = {{"allocator", m.allocator},
       {"capacity_bytes", m.capacity_bytes},
       {"context_bytes", m.context_bytes},
       {"round_bytes", m.round_bytes},
       {"batch_size", m.batch_size},
       {"param_numels", m.param_numels},
       {"param_elem_bytes", m.param_elem_bytes},
       {"param_bytes", m.param_bytes},
       {"grad_bytes", m.grad_bytes},
       {"optimizer_bytes", m.optimizer_bytes},
       {"bucket_bytes", m.bucket_bytes},
       {"forward_backward_peak", m.forward_backward_peak},
       {"forward_peak", m.forward_peak},
       {"backward_peak", m.backward_peak},
       {"optimizer_peak", m.optimizer_peak},
       {"peak_allocated", m.peak_allocated},
       {"peak_reserved", m.peak_reserved},
       {"steps", m.steps},
       {"ooms", m.ooms},
       {"alloc_retries", m.alloc_retries},
       {"failed_request", m.failed_request}};
}

void from_json(const nlohmann::json& j, MemoryRecord& m) {
  m = MemoryRecord{};
  m.allocator = get_or<std::string>(j, "allocator", "");
  m.capacity_bytes = get_or<std::int64_t>(j, "capacity_bytes", 0);
  m.context_bytes = get_or<std::int64_t>(j, "context_bytes", 0);
  m.round_bytes = get_or<std::int64_t>(j, "round_bytes", 1);
  m.batch_size = get_or<std::int64_t>(j, "batch_size", 0);
  if (auto it = j.find("param_numels"); it != j.end() && it->is_array()) m.param_numels = it->get<std::vector<std::int64_t>>();
  m.param_elem_bytes = get_or<int>(j, "param_elem_bytes", 4);
  m.param_bytes = get_or<std::int64_t>(j, "param_bytes", 0);
  m.grad_bytes = get_or<std::int64_t>(j, "grad_bytes", 0);
  m.optimizer_bytes = get_or<std::int64_t>(j, "optimizer_bytes", 0);
  m.bucket_bytes = get_or<std::int64_t>(j, "bucket_bytes", 0);
  m.forward_backward_peak = get_or<std::int64_t>(j, "forward_backward_peak", 0);
  m.forward_peak = get_or<std::int64_t>(j, "forward_peak", m.forward_backward_peak);
  m.backward_peak = get_or<std::int64_t>(j, "backward_peak", m.forward_backward_peak);
  m.optimizer_peak = get_or<std::int64_t>(j, "optimizer_peak", 0);
  m.peak_allocated = get_or<std::int64_t>(j, "peak_allocated", 0);
  m.peak_reserved = get_or<std::int64_t>(j, "peak_reserved", 0);
  m.steps = get_or<int>(j, "steps", 0);
  m.ooms = get_or<std::int64_t>(j, "ooms", 0);
  m.alloc_retries = get_or<std::int64_t>(j, "alloc_retries", 0);
  m.failed_request = get_or<std::int64_t>(j, "failed_request", 0);
}



int MemoryReport::skipped() const {
  int n = 0;
  for (const auto& e : predicted) n += e.reason.empty() ? 0 : 1;
  return n;
}

const MemoryEstimate* MemoryReport::find(const Config& c) const {
  const MemoryEstimate* found = nullptr;
  for (const auto& e : predicted)
    if (e.config == c) found = &e;  // the latest decision
  return found;
}

void to_json(nlohmann::json& j, const MemoryEstimate& m) {
  j = {{"config", m.config},   {"known", m.known},   {"why_unknown", m.why_unknown},
       {"peak", m.peak},       {"lo", m.lo},         {"hi", m.hi},
       {"phase", m.phase},     {"states", m.states}, {"activations", m.activations},
       {"optimizer_transient", m.optimizer_transient}, {"per_sample", m.per_sample}, {"fits", m.fits},
       {"reason", m.reason}};
}

void from_json(const nlohmann::json& j, MemoryEstimate& m) {
  m = MemoryEstimate{};
  if (auto it = j.find("config"); it != j.end()) m.config = it->get<Config>();
  get_opt(j, "known", m.known);
  get_opt(j, "why_unknown", m.why_unknown);
  get_opt(j, "peak", m.peak);
  get_opt(j, "lo", m.lo);
  get_opt(j, "hi", m.hi);
  get_opt(j, "phase", m.phase);
  get_opt(j, "states", m.states);
  get_opt(j, "activations", m.activations);
  get_opt(j, "optimizer_transient", m.optimizer_transient);
  get_opt(j, "per_sample", m.per_sample);
  get_opt(j, "fits", m.fits);
  get_opt(j, "reason", m.reason);
}

void to_json(nlohmann::json& j, const MemoryReport& m) {
  j = {{"on", m.on},         {"capacity", m.capacity},         {"margin", m.margin},
       {"probes", m.probes}, {"probe_seconds", m.probe_seconds}, {"predicted", m.predicted},
       {"misses", m.misses}, {"states_checks", m.states_checks}, {"advice", m.advice}};
}

void from_json(const nlohmann::json& j, MemoryReport& m) {
  m = MemoryReport{};
  get_opt(j, "on", m.on);
  get_opt(j, "capacity", m.capacity);
  get_opt(j, "margin", m.margin);
  get_opt(j, "probes", m.probes);
  get_opt(j, "probe_seconds", m.probe_seconds);
  get_opt(j, "predicted", m.predicted);
  get_opt(j, "misses", m.misses);
  get_opt(j, "states_checks", m.states_checks);
  get_opt(j, "advice", m.advice);
}

}  // namespace autotune
