// Reports from a fixed journal: tests/golden/journal.sql is the journal of a real tuning run
// (tests/golden/make_journal.sh); report.md and results.json rendered from it are golden files.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "knobs/protocol.h"
#include "reports/gbench_json.h"
#include "reports/markdown.h"
#include "tests/support/temp_dir.h"
#include "tuner/cli.h"
#include "tuner/measures/journal.h"
#include "tuner/summary/summarize.h"

namespace autotune {
namespace {

namespace fs = std::filesystem;
using testing::source_dir;
using testing::TempDir;

/// Builds DIR/journal.sqlite from the committed SQL text.
void load_fixture(const std::string& dir) {
  const std::string sql = read_file(source_dir() + "/tests/golden/journal.sql");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((fs::path(dir) / "journal.sqlite").c_str(), &db), SQLITE_OK);
  char* msg = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg);
  const std::string err = msg ? msg : "";
  sqlite3_free(msg);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << err;
}

void expect_golden(const std::string& name, const std::string& rendered) {
  const std::string path = source_dir() + "/tests/golden/" + name;
  if (std::getenv("AUTOTUNE_UPDATE_GOLDEN")) write_file_atomic(path, rendered);
  EXPECT_EQ(read_file(path), rendered) << name << " changed; if on purpose, regenerate with AUTOTUNE_UPDATE_GOLDEN=1";
}

struct Cli {
  int status;
  std::string out, err;
};
Cli cli(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int st = run_cli(args, out, err);
  return {st, out.str(), err.str()};
}

TEST(ReportGolden, MarkdownAndResultsJsonFromAFixedJournal) {
  TempDir dir;
  load_fixture(dir.str());
  const RunSummary s = load_run_summary(dir.str());
  // What the fixture run found, independent of the golden text: a confirmed winner faster than the
  // baseline, every changed knob's effect measured against its default, ranked.
  ASSERT_GE(s.winner, 0);
  EXPECT_TRUE(s.confirmation.confirmed);
  EXPECT_GT(s.speedup_lo, 1.0);
  ASSERT_FALSE(s.knob_effects.empty());
  for (size_t i = 0; i < s.knob_effects.size(); ++i) {
    const KnobEffect& e = s.knob_effects[i];
    EXPECT_TRUE(e.at_default) << e.knob << ": " << e.note;
    EXPECT_GT(e.ratio, 0) << e.knob;
    EXPECT_LE(e.lo, e.hi) << e.knob;
    if (i) {
      EXPECT_GE(s.knob_effects[i - 1].ratio, e.ratio);
    }
    // The comparison config is the winner with exactly this knob at its default.
    const Config& w = s.configs[s.winner].config;
    for (const auto& [k, v] : w.values()) EXPECT_EQ(e.without.get(k), k == e.knob ? e.without_value : v) << e.knob;
  }
  EXPECT_EQ(s.trials.size(), static_cast<size_t>(s.trials_run));
  EXPECT_FALSE(s.loss_curves.empty());
  EXPECT_FALSE(s.verdict.kind.empty());
  expect_golden("report.md", render_markdown(s));
  expect_golden("results.json", render_gbench_json(s).dump(2) + "\n");
}

TEST(ReportGolden, ReportCommandRegeneratesEveryOutputAndLeavesTheJournal) {
  TempDir dir;
  load_fixture(dir.str());
  const auto before = read_file(dir / "journal.sqlite");
  const Cli r = cli({"report", dir.str()});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* f : {"best.json", "report.md", "report.html", "results.json", "junit.xml"}) {
    EXPECT_TRUE(fs::exists(dir / f)) << f;
    EXPECT_NE(r.out.find(dir / f), std::string::npos) << r.out;
  }
  EXPECT_EQ(read_file(dir / "journal.sqlite"), before);
  EXPECT_EQ(read_file(dir / "report.md"), render_markdown(load_run_summary(dir.str())));
  // --out writes elsewhere and leaves the run folder's files alone.
  const Cli r2 = cli({"report", dir.str(), "--out", dir / "elsewhere/sub"});
  ASSERT_EQ(r2.status, 0) << r2.err;
  EXPECT_EQ(read_file(dir / "elsewhere/sub/report.md"), read_file(dir / "report.md"));
}

TEST(ReportGolden, MissingOrForeignJournalIsAOneLineError) {
  TempDir dir;
  Cli r = cli({"report", dir.str()});
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.err, "autotune report: " + dir.str() + ": no journal.sqlite there; pass the folder of a tuning run\n");
  {
    Journal j(dir / "journal.sqlite");  // a journal without run metadata
  }
  r = cli({"report", dir.str()});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("lacks the run options"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(ReportGolden, AnInterruptedRunStillReportsWhatItHas) {
  TempDir dir;
  load_fixture(dir.str());
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir / "journal.sqlite").c_str(), &db), SQLITE_OK);
    // As if killed during the confirmation: no finish time, no confirmation or ablation runs.
    ASSERT_EQ(sqlite3_exec(db,
                           "DELETE FROM meta WHERE key='finished_at'; DELETE FROM trials WHERE kind IN ('confirm','ablation');",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  const RunSummary s = load_run_summary(dir.str());
  EXPECT_FALSE(s.finished);
  const std::string md = render_markdown(s);
  EXPECT_NE(md.find("**Interrupted run:**"), std::string::npos);
  EXPECT_NE(md.find("not run: the run was interrupted before its interleaved rounds (--resume goes on)"), std::string::npos);
  EXPECT_NE(md.find("(interrupted)"), std::string::npos);
}

TEST(ReportGolden, SummaryAppendsToTheGithubStepSummaryAndStaysUnderTheLimit) {
  TempDir dir;
  load_fixture(dir.str());
  const std::string summary_file = dir / "step_summary.md";
  write_file_atomic(summary_file, "earlier step output\n");
  ::setenv("GITHUB_STEP_SUMMARY", summary_file.c_str(), 1);
  const Cli r = cli({"report", dir.str(), "--summary"});
  ::unsetenv("GITHUB_STEP_SUMMARY");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string text = read_file(summary_file);
  EXPECT_EQ(text, "earlier step output\n" + read_file(dir / "report.md"));  // appended, nothing lost
  EXPECT_NE(r.out.find("job summary:"), std::string::npos);
  const Cli unset = cli({"report", dir.str(), "--summary"});
  EXPECT_NE(unset.out.find("GITHUB_STEP_SUMMARY is not set"), std::string::npos) << unset.out;

  // Over a size limit, the all-configs table shrinks (winner and baseline kept) and says so.
  const RunSummary s = load_run_summary(dir.str());
  const std::string full = render_markdown(s);
  const std::string cut = render_markdown(s, full.size() - 200);
  EXPECT_LE(cut.size(), full.size() - 200);
  EXPECT_NE(cut.find("more configs are left out"), std::string::npos);
  EXPECT_NE(cut.find("**winner**"), std::string::npos);
  EXPECT_NE(cut.find("(baseline)"), std::string::npos);
}

}  // namespace
}  // namespace autotune
