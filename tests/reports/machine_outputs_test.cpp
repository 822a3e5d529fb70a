// results.json (Google Benchmark schema) and junit.xml.
#include <gtest/gtest.h>

#include "knobs/protocol.h"
#include "reports/gbench_json.h"
#include "reports/junit.h"
#include "tests/support/run_summary_fixture.h"
#include "tests/support/temp_dir.h"
#include "tuner/exec/subprocess.h"

namespace autotune {
namespace {

TEST(GbenchJson, OneIterationPerWindowPlusAggregatesPerConfig) {
  const auto j = render_gbench_json(testing::summary());
  EXPECT_EQ(j["context"]["executable"], "autotune");
  EXPECT_EQ(j["context"]["num_cpus"], 2);
  EXPECT_EQ(j["context"]["library_build_type"], "release");
  const auto& b = j["benchmarks"];
  ASSERT_EQ(b.size(), 2u * (3 + 4));  // 2 configs ran (the OOM one has no timings): 3 windows + 4 aggregates each
  // Named by the differences from the run's baseline (threads=1 batch 64 here), so another run pairs with it.
  EXPECT_EQ(b[0]["name"], "mlp/defaults");
  EXPECT_EQ(b[0]["autotune_config"], "batch_size=64 threads=1");
  EXPECT_EQ(b[0]["run_type"], "iteration");
  EXPECT_EQ(b[0]["repetitions"], 3);
  EXPECT_EQ(b[0]["time_unit"], "us");  // one unit with check's results.json: µs per sample
  // window 0 of the baseline: 5940 samples/s → 168.35 µs per sample.
  EXPECT_NEAR(b[0]["real_time"].get<double>(), 1e6 / 5940.0, 1e-9);
  EXPECT_DOUBLE_EQ(b[0]["samples_per_second"].get<double>(), 5940.0);
  EXPECT_EQ(b[4]["name"], "mlp/defaults_median");
  EXPECT_EQ(b[4]["run_type"], "aggregate");
  EXPECT_EQ(b[4]["aggregate_name"], "median");
  EXPECT_EQ(b[4]["time_unit"], "us");
  EXPECT_DOUBLE_EQ(b[4]["samples_per_second"].get<double>(), 6000.0);
  EXPECT_EQ(b[6]["aggregate_name"], "cv");
  EXPECT_EQ(b[6]["aggregate_unit"], "percentage");
  EXPECT_EQ(b[7]["name"], "mlp/batch_size=256");
}

TEST(GbenchJson, TheSameTrainingHasOneNameWhateverTheRunSearched) {
  const std::map<std::string, std::string> defaults = {{"batch_size", "64"}, {"zero_grad", "none"}};
  // One run searched batch_size and threads, another batch_size and precision: configs carry their own knobs.
  Config a, b;
  a.set("batch_size", "256").set("threads", "default").set("zero_grad", "none");
  b.set("precision", "fp32").set("batch_size", "256").set("zero_grad", "none");
  EXPECT_EQ(benchmark_name("mlp", a, defaults, "64"), "mlp/batch_size=256");
  EXPECT_EQ(benchmark_name("mlp", b, defaults, "64"), "mlp/batch_size=256");
  // A knob left unset trains at the worker's own default, and the name says where that is not PyTorch's.
  Config c;
  EXPECT_EQ(benchmark_name("mlp", c, defaults, "64"), "mlp/zero_grad=zeros");
  c.set("precision", "amp_bf16").set("threads", "2").set("zero_grad", "none").set("batch_size", "64");
  EXPECT_EQ(benchmark_name("m", c, defaults, "64"), "m/precision=amp_bf16,threads=2");
  Config none;
  none.set("zero_grad", "none");
  EXPECT_EQ(benchmark_name("m", none, defaults, "64"), "m/defaults");
}

TEST(Junit, OneTestcasePerCheckWithFailuresAndSuiteLevelProperties) {
  RunSummary s = testing::summary();
  s.configs[1].checks.push_back({"memory headroom", false, "peak 95% > 90%"});
  const std::string x = render_junit(s);
  EXPECT_NE(x.find("<testsuite name=\"autotune.stability\" tests=\"3\" failures=\"1\""), std::string::npos) << x;
  EXPECT_NE(x.find("<property name=\"winner\" value=\"batch_size=256 threads=1\"/>"), std::string::npos);
  EXPECT_NE(x.find("<failure message=\"peak 95% &gt; 90%\" type=\"stability\">"), std::string::npos);
  EXPECT_EQ(x.find("<testcase classname=\"autotune.mlp\" name=\"survival\" time=\"0\"><properties"), std::string::npos);
}

TEST(Junit, HostileNamesAreEscapedAndTheXmlParses) {
  RunSummary s = testing::summary();
  s.workload.name = "<script>alert(1)</script>&\"'";
  s.configs[1].checks.push_back({"a<b", false, "x & y \"quoted\" \x01"});
  const std::string x = render_junit(s);
  EXPECT_EQ(x.find("<script>"), std::string::npos);
  EXPECT_NE(x.find("&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;&apos;"), std::string::npos);
  testing::TempDir dir;
  write_file_atomic(dir / "junit.xml", x);
  SpawnOptions so;
  so.argv = {"/usr/bin/env", "python3", "-c",
             "import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); "
             "s = r.find('testsuite'); assert s.get('tests') == '3', s.get('tests'); "
             "assert [c.get('name') for c in s.iter('testcase')] == ['survival', 'a<b', 'confirmation']",
             dir / "junit.xml"};
  so.stderr_path = dir / "err";
  const auto out = run_process(so);
  EXPECT_EQ(out.exit_code, 0) << read_file(dir / "err");
}

TEST(Junit, NoWinnerIsAFailingTestcase) {
  RunSummary s = testing::summary();
  s.winner = -1;
  const std::string x = render_junit(s);
  EXPECT_NE(x.find("name=\"winner\""), std::string::npos);
  EXPECT_NE(x.find("<failure message=\"no config passed every stability check\""), std::string::npos);
}

}  // namespace
}  // namespace autotune
