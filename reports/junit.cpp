#include "reports/junit.h"

#include <fmt/format.h>

namespace autotune {

std::string render_junit(const RunSummary& s) {
  std::vector<Check> checks;
  std::string winner = "(none)";
  if (s.winner >= 0) {
    const ConfigSummary& w = s.configs[s.winner];
    winner = w.config.key();
    checks = w.checks;
    checks.push_back({"confirmation", s.confirmation.confirmed, s.confirmation.detail});
  } else {
    checks.push_back({"winner", false, "no config passed every stability check"});
  }
  int failures = 0;
  for (const auto& c : checks) failures += c.passed ? 0 : 1;
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += fmt::format("<testsuites tests=\"{}\" failures=\"{}\" errors=\"0\" time=\"{:.3f}\">\n", checks.size(), failures,
                   s.elapsed_seconds);
  x += fmt::format(
      "  <testsuite name=\"autotune.stability\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\" "
      "time=\"{:.3f}\" timestamp=\"{}\" hostname=\"{}\">\n",
      checks.size(), failures, s.elapsed_seconds, xml_escape(s.finished_at), xml_escape(s.env.hostname));
  x += "    <properties>\n";
  auto prop = [&](const std::string& k, const std::string& v) {
    x += fmt::format("      <property name=\"{}\" value=\"{}\"/>\n", xml_escape(k), xml_escape(v));
  };
  prop("workload", s.workload.name);
  prop("winner", winner);
  prop("speedup", s.speedup > 0 ? fmt::format("{:.3f}", s.speedup) : "");
  prop("speedup_ci95", s.speedup > 0 ? fmt::format("{:.3f}-{:.3f}", s.speedup_lo, s.speedup_hi) : "");
  prop("torch_version", s.env.torch_version);
  x += "    </properties>\n";
  for (const auto& c : checks) {
    x += fmt::format("    <testcase classname=\"autotune.{}\" name=\"{}\" time=\"0\">", xml_escape(s.workload.name),
                     xml_escape(c.name));
    if (c.passed) x += fmt::format("<system-out>{}</system-out></testcase>\n", xml_escape(c.detail));
    else
      x += fmt::format("\n      <failure message=\"{}\" type=\"stability\">{}</failure>\n    </testcase>\n", xml_escape(c.detail),
                       xml_escape(c.detail));
  }
  x += "  </testsuite>\n</testsuites>\n";
  return x;
}

}  // namespace autotune
