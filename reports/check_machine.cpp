// The check's machine-readable outputs: JUnit, Google Benchmark JSON, github-action-benchmark and
// Bencher inputs, GitHub annotations, and the writer of every file.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>

#include "knobs/protocol.h"
#include "knobs/knob.h"
#include "reports/check_reports.h"
#include "reports/gbench_json.h"
#include "reports/junit.h"

namespace autotune {

using nlohmann::json;

namespace {

std::vector<double> throughputs(const CheckSide& side) {
  std::vector<double> v;
  for (const auto& r : side.reps)
    if (r.status == "ok") v.push_back(r.throughput);
  return v;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const MetricDecision* metric(const CheckSummary& s, const std::string& name) {
  for (const auto& m : s.metrics)
    if (m.name == name) return &m;
  return nullptr;
}

/// GitHub workflow-command escaping: data escapes %, CR, LF; properties also ':' and ','.
std::string gh_data(const std::string& t) {
  std::string o;
  for (char c : t) o += c == '%' ? "%25" : c == '\r' ? "%0D" : c == '\n' ? "%0A" : std::string(1, c);
  return o;
}
std::string gh_property(const std::string& t) {
  std::string o;
  for (char c : gh_data(t)) o += c == ':' ? "%3A" : c == ',' ? "%2C" : std::string(1, c);
  return o;
}

}  // namespace

std::string check_name(const CheckSummary& s) {
  const std::string cfg = s.b.config.empty() ? "defaults" : s.b.config.key();
  return s.b.workload + " " + cfg;
}

std::string render_check_junit(const CheckSummary& s) {
  struct Case {
    std::string name, kind, message;  // kind: "" pass, failure, skipped, error
  };
  std::vector<Case> cases;
  const bool broken = s.verdict == "failed" || s.verdict == "interrupted";  // a CI runner must not read it as a pass
  if (broken || s.metrics.empty()) cases.push_back({"check", broken ? "error" : "skipped", s.reason});
  for (const auto& m : s.metrics)
    cases.push_back({m.name, m.verdict == "regression" ? "failure" : m.verdict == "inconclusive" ? "skipped" : "", m.reason});
  int failures = 0, errors = 0, skipped = 0;
  for (const auto& c : cases) failures += c.kind == "failure", errors += c.kind == "error", skipped += c.kind == "skipped";
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += fmt::format("<testsuites tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3f}\">\n", cases.size(),
                   failures, errors, skipped, s.elapsed_seconds);
  x += fmt::format(
      "  <testsuite name=\"autotune.check\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3f}\" "
      "timestamp=\"{}\" hostname=\"{}\">\n",
      cases.size(), failures, errors, skipped, s.elapsed_seconds, xml_escape(s.finished_at), xml_escape(s.b.env.hostname));
  x += "    <properties>\n";
  for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{{"workload", s.b.workload},
                                                                             {"baseline", s.a.source},
                                                                             {"candidate", s.b.source},
                                                                             {"verdict", s.verdict},
                                                                             {"reps", std::to_string(s.reps)},
                                                                             {"order_seed", std::to_string(s.order_seed)},
                                                                             {"torch_version", s.b.env.torch_version}})
    x += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", xml_escape(k), xml_escape(v));
  x += "    </properties>\n";
  const std::string cls = xml_escape("autotune.check." + check_name(s));
  for (const auto& c : cases) {
    x += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"0\">", cls, xml_escape(c.name));
    if (c.kind.empty()) x += fmt::format("<system-out>{}</system-out></testcase>\n", xml_escape(c.message));
    else if (c.kind == "skipped") x += fmt::format("\n      <skipped message=\"{}\"/>\n    </testcase>\n", xml_escape(c.message));
    else
      x += fmt::format("\n      <{0} message=\"{1}\" type=\"{2}\">{1}</{0}>\n    </testcase>\n", c.kind, xml_escape(c.message),
                       c.kind == "failure" ? "regression" : "side failed");
  }
  x += "  </testsuite>\n</testsuites>\n";
  return x;
}

json render_check_gbench(const CheckSummary& s) {
  json context = {{"date", s.finished_at},
                  {"host_name", s.b.env.hostname},
                  {"executable", "autotune check"},
                  {"num_cpus", s.b.env.cpu_cores},
                  {"mhz_per_cpu", 0},
                  {"cpu_scaling_enabled", false},
                  {"caches", json::array()},
                  {"library_build_type", "release"},
                  {"autotune_verdict", s.verdict},
                  {"autotune_order_seed", s.order_seed}};
  json entries = json::array();
  for (const CheckSide* side : {&s.a, &s.b}) {
    // Named as a tune names the same training (reports/gbench_json.h): the side's differences from PyTorch
    // 2.11's defaults (Python frontend, its device), behind the side — two checks of different configs do not
    // pair, and `compare.py benchmarks tune/results.json check/results.json` finds the same config in both.
    const std::string b0 = side->default_batch > 0 ? std::to_string(side->default_batch) : "";
    std::map<std::string, std::string> defaults;
    for (const Knob& k : knob_catalog()) defaults[k.name] = k.pytorch_default("python", side->env.cuda_available, b0).first;
    if (b0.empty()) defaults.erase("batch_size");  // unknown: an unset batch size is the default one
    const std::string name = fmt::format("check/{}/{}", side->name, benchmark_name(side->workload, side->config, defaults, b0));
    const std::vector<double> t = throughputs(*side);
    int i = 0;
    for (const auto& r : side->reps) {
      if (r.status != "ok") continue;
      // One iteration = one sample: real_time is microseconds per sample, lower is better (compare.py).
      entries.push_back({{"name", name},
                         {"run_name", name},
                         {"run_type", "iteration"},
                         {"repetitions", t.size()},
                         {"repetition_index", i++},
                         {"threads", 1},
                         {"iterations", 1},
                         {"real_time", us_per_sample(r.throughput)},
                         {"cpu_time", us_per_sample(r.throughput)},
                         {"time_unit", kBenchTimeUnit},
                         {"autotune_config", side->config.key()},
                         {"samples_per_second", r.throughput},
                         {"peak_memory_bytes", r.peak_bytes}});
    }
    if (t.empty()) continue;
    std::vector<double> us;
    for (double x : t) us.push_back(1e6 / x);
    const double mean = std::accumulate(us.begin(), us.end(), 0.0) / us.size();
    double ss = 0;
    for (double x : us) ss += (x - mean) * (x - mean);
    const double sd = us.size() > 1 ? std::sqrt(ss / (us.size() - 1)) : 0;
    for (const auto& [agg, v] : std::vector<std::pair<std::string, double>>{{"mean", mean},
                                                                            {"median", median_of(us)},
                                                                            {"stddev", sd},
                                                                            {"cv", mean > 0 ? sd / mean : 0}})
      entries.push_back({{"name", name + "_" + agg},
                         {"run_name", name},
                         {"run_type", "aggregate"},
                         {"repetitions", t.size()},
                         {"threads", 1},
                         {"aggregate_name", agg},
                         {"aggregate_unit", agg == "cv" ? "percentage" : "time"},
                         {"iterations", t.size()},
                         {"real_time", v},
                         {"cpu_time", v},
                         {"time_unit", kBenchTimeUnit}});
  }
  return {{"context", context}, {"benchmarks", entries}};
}

json render_check_gab(const CheckSummary& s, bool higher_is_better) {
  json out = json::array();
  const MetricDecision* m = metric(s, higher_is_better ? "throughput" : "peak_memory");
  if (!m) return out;
  const double scale = higher_is_better ? 1 : 1.0 / (1 << 20);  // memory in MiB: readable charts
  out.push_back({{"name", fmt::format("{} {}", check_name(s), higher_is_better ? "throughput" : "peak memory")},
                 {"unit", higher_is_better ? "samples/s" : "MiB"},
                 {"value", m->median_b * scale},
                 {"range", fmt::format("±{:.1f}%", 100 * m->cv_b)},
                 {"extra", fmt::format("baseline {:.6g}; B/A {:.3f} [{:.3f}, {:.3f}]; {}", m->median_a * scale, m->ratio,
                                       m->ratio_lo, m->ratio_hi, m->verdict)}});
  return out;
}

json render_check_bmf(const CheckSummary& s) {
  json measures = json::object();
  for (const auto& m : s.metrics) {
    // The candidate's median with the baseline-relative CI mapped onto it.
    measures[m.name == "throughput" ? "throughput" : "peak-memory"] = {{"value", m.median_b},
                                                                       {"lower_value", m.median_a * m.ratio_lo},
                                                                       {"upper_value", m.median_a * m.ratio_hi}};
  }
  return {{check_name(s), measures}};
}

std::vector<std::string> github_annotations(const CheckSummary& s) {
  std::vector<std::string> out;
  if (s.verdict == "failed" || s.verdict == "interrupted")
    out.push_back("::error title=" +
                  gh_property(s.verdict == "failed" ? "autotune check: a side failed" : "autotune check: interrupted") +
                  "::" + gh_data(s.reason));
  for (const auto& m : s.metrics)
    if (m.verdict == "regression" || m.verdict == "inconclusive")
      out.push_back(fmt::format("::{} title={}::{}", m.verdict == "regression" ? "error" : "warning",
                                gh_property(fmt::format("autotune check: {} {} ({})", m.name, m.verdict, check_name(s))),
                                gh_data(m.reason)));
  if (s.verdict == "inconclusive" && s.metrics.empty())
    out.push_back("::warning title=" + gh_property("autotune check: inconclusive") + "::" + gh_data(s.reason));
  return out;
}

std::vector<std::string> write_check_reports(const CheckSummary& s, const std::string& dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  const std::vector<std::pair<std::string, std::string>> files = {
      {"check.json", json(s).dump(2) + "\n"},
      {"check.md", render_check_markdown(s)},
      {"check.html", render_check_html(s)},
      {"junit.xml", render_check_junit(s)},
      {"results.json", render_check_gbench(s).dump(2) + "\n"},
      {"gab-throughput.json", render_check_gab(s, true).dump(2) + "\n"},
      {"gab-memory.json", render_check_gab(s, false).dump(2) + "\n"},
      {"bmf.json", render_check_bmf(s).dump(2) + "\n"},
  };
  std::vector<std::string> paths;
  for (const auto& [name, text] : files) {
    const std::string path = (fs::path(dir) / name).string();
    write_file_atomic(path, text);
    paths.push_back(path);
  }
  return paths;
}

}  // namespace autotune
