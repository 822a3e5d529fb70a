#include "reports/markdown.h"

#include <gtest/gtest.h>

#include "reports/best_json.h"
#include "reports/converge_report.h"
#include "reports/html.h"
#include "reports/profile_text.h"
#include "reports/run_facts.h"

#include <cstdlib>

#include "knobs/protocol.h"
#include "tests/support/temp_dir.h"
#include "tests/support/run_summary_fixture.h"

namespace autotune {
namespace {

using testing::cfg;
using testing::summary;

TEST(ProfileText, CommunicationLineAndARankFolderTrace) {
  TracedProfile tp;
  tp.label = "winner";
  tp.trace = "/runs/r1/traces/winner/rank0.json";
  tp.profile.valid = true;
  tp.profile.mode = "host-only";
  tp.profile.steps = 5;
  tp.profile.verdict = "compute-bound";
  tp.profile.comm = CommProfile{"host collectives", 2.0, 21.57, 0.474, 11.35, 3.47};
  ProfileText t = profile_text(tp);
  const auto has = [&](const std::string& needle) {
    for (const auto& l : t.lines)
      if (l.find(needle) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(
      has("Communication (host collectives): 2.0 collectives and 3.47 MB per step, 21.57 ms per step, 47% of it "
          "hidden behind compute (11.35 ms exposed)."));
  EXPECT_TRUE(has("Trace: traces/winner/rank0.json, one per rank in traces/winner/ (Perfetto, HTA)."));
  // NCCL kernels carry no payload: no MB; a one-rank trace lies directly in traces/.
  tp.profile.comm = CommProfile{"nccl kernels", 3.0, 1.5, 0.9, 0.15, 0};
  tp.trace = "/runs/r1/traces/winner.json";
  t = profile_text(tp);
  EXPECT_TRUE(has("Communication (nccl kernels): 3.0 collectives per step, 1.50 ms per step, 90% of it hidden"));
  EXPECT_TRUE(has("Trace: traces/winner.json (Perfetto, HTA)."));
  tp.profile.comm.reset();
  t = profile_text(tp);
  EXPECT_FALSE(has("Communication"));
  // A GPU profile says what kinds of kernels the step's time went to (kinds under 1% left out).
  tp.profile.gpu = true;
  tp.profile.kernel_classes = {{"matmul / conv", 120, 61.2, 0.62}, {"elementwise", 400, 20.1, 0.204}, {"other", 3, 0.2, 0.002}};
  t = profile_text(tp);
  EXPECT_TRUE(has("Kernel time per step by kind: matmul / conv 62% (61.20 ms), elementwise 20% (20.10 ms)."));
  // Each top kernel: calls, time per call, the phases that launched it (largest first), its launch geometry.
  KernelStat add;
  add.name = "elementwise_kernel<128, 4>";
  add.count = 120;
  add.total_ms = 36.0;
  add.share = 0.2;
  add.mean_us = 300;
  add.grid = {49152, 1, 1};
  add.block = {128, 1, 1};
  add.geometries = 2;
  add.phases = {{"forward", 0.25}, {"backward", 0.75}};
  KernelStat plain;
  plain.name = "gemm";
  plain.count = 1;
  tp.profile.top_kernels = {add, plain};
  t = profile_text(tp);
  ASSERT_EQ(t.kernels.size(), 2u);
  EXPECT_EQ(t.kernels[0], (std::array<std::string, 7>{"elementwise_kernel<128, 4>", "120", "300.0 µs", "36.00 ms", "20%",
                                                      "backward 75%, forward 25%", "49152×1×1 × 128×1×1 (+1 other)"}));
  EXPECT_EQ(t.kernels[1][5], "—");  // no phase ids, no geometry recorded
  EXPECT_EQ(t.kernels[1][6], "—");
  RunSummary s = summary();
  s.profiles = {tp};
  const std::string md = render_markdown(s);
  EXPECT_NE(md.find("| kernel | calls | per call | time | share | launched from | grid × block |"), std::string::npos) << md;
  EXPECT_NE(md.find("| `elementwise_kernel<128, 4>` | 120 | 300.0 µs | 36.00 ms | 20% | backward 75%, forward 25% | "
                    "49152×1×1 × 128×1×1 (+1 other) |"),
            std::string::npos)
      << md;
}

// A cell is readable as plain text and renders as text: no HTML entities in the raw file, and only a '<' that would
// open a tag or a '&' that would start an entity is escaped (with a backslash); table breakers as before.
TEST(Markdown, ACellEscapesOnlyWhatARendererWouldTakeForMarkup) {
  EXPECT_EQ(md_cell("IQR/median 6.2% over 3 windows > 5%"), "IQR/median 6.2% over 3 windows > 5%");
  EXPECT_EQ(md_cell("<script>alert(1)</script>"), "\\<script>alert(1)\\</script>");
  EXPECT_EQ(md_cell("a < b, R&D, &lt; and &#60;"), "a < b, R&D, \\&lt; and \\&#60;");
  EXPECT_EQ(md_cell("a|b\nc <!-- x -->"), "a\\|b c \\<!-- x -->");
}

TEST(Markdown, SummaryTableAndApplySection) {
  const std::string md = render_markdown(summary());
  EXPECT_NE(md.find("# autotune report — mlp\n"), std::string::npos);
  EXPECT_NE(md.find("MLP \\| test"), std::string::npos);  // a '|' in user text cannot break a table
  // The winner leads with what it changes from the baseline; its full config follows.
  EXPECT_NE(md.find("**Winner:** `batch_size=256` — 12,000 samples/s in the interleaved confirmation "
                    "(95% CI 11,900–12,100); 12,346 in the search"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- winner: `batch_size=256 threads=1`"), std::string::npos) << md;  // the full config, folded away
  EXPECT_NE(md.find("**Memory:** peak RSS 400 MiB, 1.00× the baseline's 400 MiB"), std::string::npos) << md;
  EXPECT_NE(md.find("**Data:** synthetic batches"), std::string::npos) << md;  // always a data line
  EXPECT_NE(md.find("**Speedup over the baseline:** 2.06× (95% CI 1.90–2.10×), from interleaved confirmation runs, paired "
                    "round by round (winner ÷ baseline 2.03×, 2.09× in the 2 "
                    "rounds; their geometric mean)"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 1 | `(baseline)` | 6,000 | 5,880–6,120 | 1.2% | 400 MiB | 1 | ok | stable (baseline) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 2 | `batch_size=256` | 12,346 |"), std::string::npos);
  EXPECT_NE(md.find("| **winner** |"), std::string::npos);
  EXPECT_NE(md.find("| 3 | `batch_size=512` | – | – | – | 400 MiB | 1 | oom | rejected: oom: CUDA out of memory |"),
            std::string::npos)
      << md;
  // Unexplored configs as their change from the baseline, not whole configs.
  EXPECT_NE(md.find("**Not explored (budget):** 1 configs, each as its change from the baseline — `batch_size=1024`"),
            std::string::npos)
      << md;
  // The snippets change what the winner changes: batch_size; threads=1 is the baseline's already.
  EXPECT_NE(md.find("const int64_t batch_size = 256;"), std::string::npos) << md;
  EXPECT_EQ(md.find("torch::set_num_threads(1);"), std::string::npos) << md;
}

// A task's winner has no C++ to change (its training is Python): How to apply shows the task's loop in Python alone, in
// both formats — not "nothing to change" (the photo task's report said so beside a 1.73× num_workers=2 winner).
TEST(Markdown, ATasksWinnerIsAppliedInPythonAlone) {
  RunSummary s = summary();
  s.workload.python_task = "/home/u/proj/train.py";
  s.workload.task_functions = {"model", "dataset", "optimizer"};
  Config w = s.configs[s.winner].config;
  w.set("num_workers", "2");
  s.configs[s.winner].config = w;
  const std::string md = render_markdown(s), html = render_html(s);
  EXPECT_EQ(md.find("nothing to change"), std::string::npos) << md;
  EXPECT_EQ(md.find("C++ (LibTorch):"), std::string::npos) << md;
  EXPECT_NE(md.find("Python:\n\n```python\n"), std::string::npos) << md;
  EXPECT_NE(md.find("import train as task"), std::string::npos) << md;
  EXPECT_NE(md.find("num_workers=2, persistent_workers=True"), std::string::npos) << md;
  EXPECT_EQ(html.find("nothing to change"), std::string::npos);
  EXPECT_EQ(html.find("C++ (LibTorch):"), std::string::npos);
  EXPECT_NE(html.find("<p>Python:</p><pre><code>"), std::string::npos);
}

TEST(Markdown, ASpeedupWhoseIntervalReachesOneIsFlaggedInEveryFormat) {
  RunSummary s = summary();
  EXPECT_EQ(render_markdown(s).find("not significant"), std::string::npos);
  EXPECT_TRUE(render_best_json(s)["speedup"]["significant"].get<bool>());
  s.speedup = 1.40;
  s.speedup_lo = 0.96;
  s.speedup_hi = 1.70;
  const std::string md = render_markdown(s);
  EXPECT_NE(md.find("(95% CI 0.96–1.70×), from interleaved confirmation runs, paired round by round (winner ÷ baseline "
                    "2.03×, 2.09× in the 2 rounds; their geometric mean) — ⚠️ not significant at 95%: the interval reaches 0.96×"),
            std::string::npos)
      << md;
  EXPECT_NE(render_html(s).find("not significant at 95%: the interval reaches 0.96×"), std::string::npos);
  EXPECT_FALSE(render_best_json(s)["speedup"]["significant"].get<bool>());
}

TEST(Markdown, TheHeapPolicyTheTrialsRanWithIsInHowToApply) {
  RunSummary s = summary();
  EXPECT_EQ(render_markdown(s).find("Host heap:"), std::string::npos);  // not recorded (older worker): nothing said
  s.configs[s.winner].host_malloc = "glibc malloc: mmap_threshold 32 MiB, trim off";
  s.configs[s.winner].minor_faults_per_step = 101;
  const std::string md = render_markdown(s);
  EXPECT_NE(md.find("Host heap: every trial, the baseline's included, ran with glibc malloc: mmap_threshold 32 MiB, trim off "
                    "(the winner: 101 minor page faults per step)."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("```cpp\n#include <malloc.h>"), std::string::npos);
  EXPECT_NE(md.find("```sh\n# glibc reads these"), std::string::npos);
  EXPECT_LT(md.find("Host heap:"), md.find("Why these knobs matter:"));
  const std::string html = render_html(s);
  EXPECT_NE(html.find("<p>Host heap: every trial"), std::string::npos);
  EXPECT_NE(html.find("<pre><code>#include &lt;malloc.h&gt;"), std::string::npos);
}

TEST(Markdown, DataParallelConfigsShowScalingAgainstTheirOneProcessTwinAndWhereCommunicationWent) {
  RunSummary s = summary();
  EXPECT_EQ(render_markdown(s).find("## Data parallel"), std::string::npos) << "no section without ranks > 1";
  ConfigSummary two = cfg("64", 9000, true);  // 2 ranks of the baseline's config (batch 64, threads 1)
  two.config.set("ranks", "2").set("bucket_mb", "1");
  DistInfo d;
  d.world = 2;
  d.backend = "gloo";
  d.bucket_bytes = {1 << 20, 3 << 20};
  for (int r = 0; r < 2; ++r) {
    RankStats k;
    k.rank = r;
    k.step_ms = 14 + r;
    k.comm_ms_per_step = 4;
    k.overlap_ms_per_step = 3;
    k.collectives_per_step = 2;
    k.comm_bytes_per_step = 4.2e6;
    d.ranks.push_back(k);
  }
  two.dist = d;
  s.configs.push_back(two);
  const std::string md = render_markdown(s);
  // 9000 / (2 × 6000) = 75% against the one-process config with the same other knobs (the baseline).
  EXPECT_NE(md.find("| `bucket_mb=1 ranks=2` | 2 (gloo) | 9,000 | 75% vs `(baseline)` | 15.0 ms | 4.0 ms | 75% | 2.0 | 4.2 | "
                    "2 (1.0, 3.0 MiB) |"),
            std::string::npos)
      << md;
  EXPECT_NE(render_html(s).find("<h2>Data parallel</h2>"), std::string::npos);
  // NCCL: the host saw only the enqueue, so no communication time or hidden share is claimed.
  for (auto& k : s.configs.back().dist->ranks) {
    k.comm_timed = false;
    k.comm_ms_per_step = k.overlap_ms_per_step = 0;
  }
  s.configs.back().dist->backend = "nccl";
  const std::string nccl = render_markdown(s);
  EXPECT_NE(nccl.find("| 2 (nccl) | 9,000 | 75% vs `(baseline)` | 15.0 ms | not timed on the host (NCCL): see the profile's "
                      "NCCL kernels | – | 2.0 |"),
            std::string::npos)
      << nccl;
  EXPECT_NE(render_html(s).find("<td>not timed on the host (NCCL): see the profile&#39;s NCCL kernels</td><td>–</td>"),
            std::string::npos);
}

TEST(Markdown, NoWinnerSaysSo) {
  RunSummary s = summary();
  s.winner = -1;
  const std::string md = render_markdown(s);
  // Its configs are stable, so the heading does not say that none was: "No winner", each stable row saying why not.
  EXPECT_NE(md.find("**No winner:**"), std::string::npos);
  EXPECT_EQ(md.find("**No stable config:**"), std::string::npos);
  EXPECT_NE(md.find("| stable, not ranked: "), std::string::npos);
  EXPECT_EQ(md.find("## How to apply"), std::string::npos);
}

// Only the baseline, measured once and noisy, a budget spent on it (a full-size model on a short budget): the first
// screen says why, how long one trial takes and what budget a search needs — in the console's words too.
TEST(Markdown, NoStableConfigSaysWhyAndWhatBudgetASearchNeeds) {
  RunSummary s;
  s.budget_seconds = 120;
  s.elapsed_seconds = 197;
  s.trials_run = 1;
  s.trial_seconds = 194;
  s.search_budget_minutes = 43;
  s.baseline = 0;
  s.winner = -1;
  ConfigSummary b;
  b.status = TrialStatus::ok;
  b.trial_ids = {1};
  b.checks = {{"measurement noise", false, "IQR/median 7.5% over 3 windows > 5%"}};
  b.is_baseline = true;
  s.configs = {b};
  const std::string line = no_stable_config_line(s);
  EXPECT_EQ(line, "1 config measured, none stable: it was noisy. The budget left no room to measure it again: one trial takes "
                  "about 194 s here, and a search of a few configs (with its confirmation) needs about --budget 43m");
  EXPECT_NE(render_markdown(s).find("**No stable config:** " + line + " (each config's reason: the table below)."), std::string::npos);
  EXPECT_NE(render_html(s).find(line), std::string::npos);
  // Three configs, two timed beside another program that never went away: named, with what to do.
  ConfigSummary busy = b;
  busy.checks = {{"quiet host", false, "other processes used 1.00 of 2 CPUs"}};
  busy.trial_ids = {2, 3, 4};
  busy.is_baseline = false;
  s.configs = {b, busy, busy};
  s.busy_host.rejected = 2;
  s.budget_seconds = 600;
  EXPECT_EQ(no_stable_config_line(s), "3 configs measured, none stable: 1 noisy, 2 timed while other programs used the host. "
                                      "A config timed beside another program cannot win: continue this run with --resume once the "
                                      "host is quiet, tune on a quiet host, or allow that much with --max-host-load");
}

TEST(BestJson, FieldsOfTheWinner) {
  const auto j = render_best_json(summary());
  EXPECT_EQ(j["schema"], "autotune.best/1");
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["config"]["batch_size"], "256");
  EXPECT_DOUBLE_EQ(j["winner"]["samples_per_s"]["median"].get<double>(), 12345.6);
  EXPECT_EQ(j["baseline"]["config"]["batch_size"], "64");
  EXPECT_DOUBLE_EQ(j["speedup"]["median"].get<double>(), 2.06);
  EXPECT_EQ(j["stability"].back()["check"], "confirmation");
  EXPECT_EQ(j["search"]["unexplored"][0]["batch_size"], "1024");
  EXPECT_EQ(j["environment"]["torch_version"], "2.11.0");
}

TEST(BestJson, GoldenFile) {
  // tests/golden/best.json is the documented schema on a fixed run. Changing the format means
  // re-generating it on purpose: AUTOTUNE_UPDATE_GOLDEN=1 ctest -R reports_markdown_test.
  RunSummary s = summary();
  s.env.hostname = "golden-host";
  s.env.device_name = "Golden CPU";
  s.started_at = "2026-11-21T10:00:00Z";
  s.finished_at = "2026-11-21T10:00:36Z";
  s.skipped_knobs = {{"cudnn_benchmark", "needs a CUDA device; none is available"}};
  s.winner_note = "";
  s.confirmations = {{s.configs[1].config, s.confirmation}};
  s.configs[1].checks.push_back({"measurement noise", true, "IQR/median 1.2% over 3 windows ≤ 5% (attempt 1 of 1)"});
  const std::string golden = testing::source_dir() + "/tests/golden/best.json";
  const std::string rendered = render_best_json(s).dump(2) + "\n";
  if (std::getenv("AUTOTUNE_UPDATE_GOLDEN")) write_file_atomic(golden, rendered);
  EXPECT_EQ(nlohmann::json::parse(read_file(golden)), nlohmann::json::parse(rendered))
      << "best.json changed; if on purpose, regenerate with AUTOTUNE_UPDATE_GOLDEN=1";
}

// What left busy configs at one trial is named as it was: the budget, an interrupt, or a host still busy after the
// run's last wait with budget left (the run's meta.busy_at_end) — the console had said "not timed again: the host is
// still busy" above a busy line that blamed the budget.
TEST(BusyHostLine, NamesWhatLeftConfigsAtOneTrial) {
  RunSummary s;
  s.finished = true;
  s.busy_host.measured = 5;
  s.busy_host.busy = 5;
  s.busy_host.cpus = 2;
  s.busy_host.max_other_cores = 0.8;
  s.busy_host.rejected = 3;
  s.busy_host.once = 2;
  const std::string budget = busy_host_line(s);
  EXPECT_NE(budget.find("2 of them timed once only, the budget leaving no room to time them again"), std::string::npos) << budget;
  s.busy_host.ended_busy = true;
  const std::string host = busy_host_line(s);
  EXPECT_NE(host.find("2 of them timed once only, the host still busy after the run's last wait, too busy to time them again"),
            std::string::npos)
      << host;
  EXPECT_EQ(host.find("budget"), std::string::npos) << host;
  s.busy_host.once = 5;  // none timed again
  const std::string none = busy_host_line(s);
  EXPECT_NE(none.find("The host was still busy after the run's last wait, so they could not be timed again: their configs cannot win"),
            std::string::npos)
      << none;
  s.finished = false;  // an interrupt says so, whatever the host did
  EXPECT_NE(busy_host_line(s).find("The run was interrupted before they could be timed again"), std::string::npos);
}

// converge.md's Runs table gives the Adam β2 and ε a run trained with — not the flags' values beside a task whose own
// optimizer() they never touched (a text task built Adam with β2 0.98; the table said 0.999).
TEST(ConvergeRunsTable, ATasksOwnOptimizerIsNamedNotTheFlagsBetas) {
  ConvergeSummary s;
  ConvergeRun r;
  r.label = "baseline";
  r.role = "baseline";
  r.change = "(baseline)";
  r.global_batch = 8;
  r.lr = 0.003;
  r.beta2 = 0.999;
  r.eps = 1e-8;
  r.status = "ok";
  s.runs.push_back(r);
  const std::string flags = render_converge_markdown(s);
  EXPECT_NE(flags.find("| 0.999, 1e-08 |"), std::string::npos) << flags;
  s.workload.task_functions = {"model", "dataset", "optimizer"};
  s.workload.optimizer = "torch.optim.Adam";
  s.workload.optimizer_lr = 0.003;
  const std::string task = render_converge_markdown(s);
  EXPECT_NE(task.find("| its torch.optim.Adam's own |"), std::string::npos) << task;
  EXPECT_EQ(task.find("0.999"), std::string::npos) << task;
  EXPECT_NE(render_converge_html(s).find("its torch.optim.Adam&#39;s own"), std::string::npos);
}

}  // namespace
}  // namespace autotune
