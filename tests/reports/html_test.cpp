#include "reports/html.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "reports/markdown.h"
#include "tests/support/run_summary_fixture.h"

namespace autotune {
namespace {

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = 0; (p = hay.find(needle, p)) != std::string::npos; p += needle.size()) ++n;
  return n;
}

/// Every string a user (or a model, or a host) controls, set to markup.
RunSummary hostile() {
  RunSummary s = testing::summary();
  const std::string x = "<script>alert(1)</script>";
  s.workload.name = x;
  s.workload.description = "<img src=x onerror=alert(2)>";
  s.env.hostname = "\"><svg onload=alert(3)>";
  s.env.device_name = "</script><script>alert(4)</script>";
  s.configs[2].reason = "oom: <b>boom</b> & </script>";
  s.configs[1].checks.push_back({"<i>check</i>", true, "'quoted' & \"double\""});
  s.winner_note = "<iframe src=//evil>";
  s.trials = {{1, "baseline", "(baseline)", "ok", 6000, ""},
              {2, "search", "batch_size=512", "oom", 0, "</script><script>alert(5)</script>"}};
  s.loss_curves = {{"</script>", {1.0, 0.5}, 1}};
  return s;
}

TEST(Html, UserStringsAreEscapedInTextAndInTheDataBlock) {
  ::setenv("AUTOTUNE_CHARTJS", "/nonexistent/chart.js", 1);
  const std::string h = render_html(hostile());
  ::unsetenv("AUTOTUNE_CHARTJS");
  EXPECT_EQ(h.find("alert(1)</script>"), std::string::npos);
  EXPECT_EQ(h.find("<img src=x"), std::string::npos);
  EXPECT_EQ(h.find("<svg"), std::string::npos);
  EXPECT_EQ(h.find("<b>boom"), std::string::npos);
  EXPECT_EQ(h.find("<iframe"), std::string::npos);
  EXPECT_EQ(h.find("<i>check"), std::string::npos);
  EXPECT_NE(h.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(h.find("&quot;&gt;&lt;svg onload=alert(3)&gt;"), std::string::npos);
  // Exactly our own script elements: the data block, the status line (no Chart.js) and the page script.
  EXPECT_EQ(count(h, "<script"), 3u);
  EXPECT_EQ(count(h, "</script>"), 3u);
  // The data block keeps the strings, with <, > and & as JSON \u escapes.
  EXPECT_NE(h.find("\\u003c/script\\u003e\\u003cscript\\u003ealert(5)"), std::string::npos);
}

TEST(Html, FallbacksGroupIntoOneTableAndSyntheticLossIsCaptioned) {
  RunSummary s = testing::summary();
  const Config base = s.configs[s.baseline].config;
  for (const char* v : {"bucket_mb=1", "static_graph=true"}) {
    Config p = base;
    p.set_assignment(v);
    s.folded.push_back({p, base, {std::string(v) + ": only with ranks > 1 (one process has no gradient communication); ran with x"}});
  }
  s.loss_curves = {{"winner", {1.0, 0.5}, 1}};
  s.unprofiled = {{"winner", "not traced: the run was interrupted"}};
  const std::string h = render_html(s);
  const std::string md = render_markdown(s);
  // One row for both proposals (they ran as the same config), the reason once with both knobs.
  EXPECT_EQ(count(h, "only with ranks &gt; 1"), 1u) << h;
  EXPECT_NE(h.find("bucket_mb, static_graph: only with ranks &gt; 1"), std::string::npos);
  EXPECT_EQ(count(md, "only with ranks > 1"), 1u) << md;  // no entity in the Markdown's raw text
  EXPECT_NE(md.find("| `(baseline)` | `bucket_mb=1`, `static_graph=true` |"), std::string::npos) << md;
  // Synthetic data: said in the header, and the loss chart says why its fall is not learning.
  EXPECT_NE(h.find("<b>Synthetic data:</b>"), std::string::npos);
  EXPECT_NE(md.find("**Data:** "), std::string::npos);
  EXPECT_NE(md.find("**Profile of the winner:** not traced: the run was interrupted"), std::string::npos);
  EXPECT_NE(h.find("<b>Profile of the winner:</b> not traced: the run was interrupted"), std::string::npos);
}

TEST(Html, WithoutChartJsTheTablesRemainAndTheReasonIsShown) {
  ::setenv("AUTOTUNE_CHARTJS", "/nonexistent/chart.js", 1);
  const std::string h = render_html(testing::summary());
  ::unsetenv("AUTOTUNE_CHARTJS");
  EXPECT_NE(h.find("Charts unavailable: Chart.js was not found at /nonexistent/chart.js"), std::string::npos);
  EXPECT_NE(h.find("<table>"), std::string::npos);
  EXPECT_NE(h.find("12,346"), std::string::npos);  // the winner's throughput is in a table
}

TEST(Html, SelfContainedWithChartJsInlinedAndNoNetwork) {
  RunSummary s = testing::summary();
  KnobEffect e;
  e.knob = "batch_size";
  e.winner_value = "256";
  e.without_value = "64";
  e.ratio = 2.0;
  e.lo = 1.9;
  e.hi = 2.1;
  e.at_default = true;
  s.knob_effects = {e};
  s.loss_curves = {{"winner", {2.0, 1.0}, 1}};
  const std::string h = render_html(s);
  if (h.find("Charts unavailable") != std::string::npos) GTEST_SKIP() << "libjs-chart.js not installed: " << chartjs_path();
  EXPECT_NE(h.find("Chart.js v"), std::string::npos);  // the library itself, inlined
  EXPECT_NE(h.find("default-src 'none'"), std::string::npos);
  // No element loads anything: no src= / href= attributes on script, link, img or iframe.
  EXPECT_FALSE(std::regex_search(h, std::regex("<(script|link|img|iframe)[^>]*(src|href)=", std::regex::icase)));
  for (const char* id : {"chart-effects", "chart-breakdown", "chart-trials", "chart-memory", "chart-loss"})
    EXPECT_NE(h.find(std::string("id=\"") + id + "\""), std::string::npos) << id;
}

TEST(Html, PerThousandSamplesNormalisesByBatchAndAccumulation) {
  ConfigSummary c;
  c.batch_size = 50;
  c.config.set("grad_accum", "2");
  c.breakdown = {1, 2, 3, 4, 5, 6};
  const PhaseTimes t = per_1k_samples(c);  // 100 samples per step → ×10
  EXPECT_DOUBLE_EQ(t.data, 10);
  EXPECT_DOUBLE_EQ(t.other, 60);
  EXPECT_DOUBLE_EQ(t.total(), 210);
}

TEST(Markdown, AKnobThatSlowsTheWinnerIsFlagged) {
  RunSummary s = testing::summary();
  KnobEffect e;
  e.knob = "threads";
  e.winner_value = "1";
  e.without_value = "default";
  e.ratio = 0.8;
  e.lo = 0.7;
  e.hi = 0.9;
  e.at_default = true;
  e.note = "the winner is faster without it (0.80× [0.70, 0.90])";
  s.knob_effects = {e};
  EXPECT_NE(render_markdown(s).find("⚠️ `threads`: the winner is faster without it (0.80× [0.70, 0.90])."),
            std::string::npos);
  EXPECT_NE(render_html(s).find("<p class=\"warn\"><code>threads</code>: the winner is faster without it"), std::string::npos);
}

TEST(Markdown, HostileStringsCannotBreakTheTables) {
  const std::string md = render_markdown(hostile());
  // Every '<' that would open a tag is backslash-escaped (a literal '<' to a Markdown renderer), no entities.
  EXPECT_NE(md.find("oom: \\<b>boom\\</b> & \\</script>"), std::string::npos) << md;
  EXPECT_NE(md.find("# autotune report — \\<script>alert(1)\\</script>"), std::string::npos) << md;
  for (const std::string tag : {"<script", "</script", "<img", "<b>", "</b>", "<iframe", "<i>"})
    for (size_t at = md.find(tag); at != std::string::npos; at = md.find(tag, at + 1))
      EXPECT_TRUE(at > 0 && md[at - 1] == '\\') << "an unescaped " << tag << " at " << at;
  EXPECT_NE(md.find("`\"><svg onload=alert(3)>`"), std::string::npos) << "a code span, where nothing is markup";
  EXPECT_EQ(md.find("&lt;"), std::string::npos);
  RunSummary s = testing::summary();
  s.configs[2].reason = "a | b\nc";
  const std::string md2 = render_markdown(s);
  EXPECT_NE(md2.find("a \\| b c"), std::string::npos);
}

}  // namespace
}  // namespace autotune
