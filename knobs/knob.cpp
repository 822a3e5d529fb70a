#include "knobs/knob.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "knobs/did_you_mean.h"
#include "knobs/error.h"

namespace autotune {

namespace {

std::optional<std::int64_t> parse_int(const std::string& s) {
  std::int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || p != end || s.empty()) return std::nullopt;
  return v;
}

std::vector<Knob> make_catalog() {
  std::vector<Knob> k;
  {
    Knob b;
    b.name = "batch_size";
    b.type = Knob::Type::integer;
    b.values = {"32", "64", "128", "256"};
    b.min = 1;
    b.max = 1 << 20;
    b.default_value = "workload";
    b.applies = "always";
    b.tip = "samples per step per rank; larger batches amortise per-step overhead until compute saturates "
            "or memory runs out — the fastest batch is not the largest that fits";
    k.push_back(b);
  }
  {
    Knob t;
    t.name = "threads";
    t.type = Knob::Type::integer;
    t.values = {"default", "1", "2"};
    t.min = 1;
    t.max = 1024;
    t.words = {"default"};
    t.default_value = "default";
    t.applies = "always (intra-op threads of the training process)";
    t.tip = "torch::set_num_threads; torch's default is one thread per physical core — fewer can win when "
            "ops are small or loader threads need the cores";
    k.push_back(t);
  }
  return k;
}

}  // namespace

void Knob::validate(const std::string& value) const {
  if (type == Type::choice) {
    if (std::find(values.begin(), values.end(), value) != values.end()) return;
    throw UsageError(fmt::format("knob '{}': '{}' is not allowed; allowed: {}{}", name, value, join(values),
                                 did_you_mean(value, values)));
  }
  if (std::find(words.begin(), words.end(), value) != words.end()) return;
  const auto v = parse_int(value);
  if (!v || *v < min || *v > max) {
    throw UsageError(fmt::format("knob '{}': '{}' is not allowed; allowed: {}{}", name, value, domain_text(),
                                 did_you_mean(value, words)));
  }
}

std::string Knob::domain_text() const {
  if (type == Type::choice) return join(values);
  std::string s = fmt::format("integer {}..{}", min, max);
  if (!words.empty()) s += " or " + join(words, " or ");
  return s;
}

std::optional<std::string> Knob::not_applicable(const TargetInfo& t) const {
  if (requires_.cuda && !t.cuda) return std::string("needs a CUDA device; none is available");
  if (requires_.min_gpus > t.gpu_count)
    return fmt::format("needs at least {} GPUs; {} available", requires_.min_gpus, t.gpu_count);
  if (requires_.conv_model && !t.conv_model) return std::string("applies to convolutional models only");
  if (requires_.image_data && !t.image_data) return std::string("applies to image workloads only");
  return std::nullopt;
}

const std::vector<Knob>& knob_catalog() {
  static const std::vector<Knob> catalog = make_catalog();
  return catalog;
}

std::vector<std::string> knob_names() {
  std::vector<std::string> names;
  for (const auto& k : knob_catalog()) names.push_back(k.name);
  return names;
}

const Knob& find_knob(const std::string& name) {
  for (const auto& k : knob_catalog())
    if (k.name == name) return k;
  throw UsageError(fmt::format("unknown knob '{}'; known knobs: {}{}", name, join(knob_names()),
                               did_you_mean(name, knob_names())));
}

}  // namespace autotune
