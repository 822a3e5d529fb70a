#include "tuner/measures/journal.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "knobs/protocol.h"
#include "tests/support/expect_throw_msg.h"
#include "tests/support/temp_dir.h"

namespace autotune {
namespace {

TrialRecord record(const std::string& batch, TrialStatus st, double seconds) {
  TrialRecord r;
  r.kind = TrialKind::search;
  r.plan.setup.workload = "mlp";
  r.plan.config.set("batch_size", batch);
  r.result.status = st;
  r.result.workload = "mlp";
  r.result.config = r.plan.config;
  r.result.windows = {{5, 320, seconds}, {5, 320, seconds}, {5, 320, seconds}};
  r.outcome = "exit 0";
  r.stderr_tail = "warning: something\n";
  r.started_at = "2026-11-21T10:00:00Z";
  r.finished_at = "2026-11-21T10:00:03Z";
  return r;
}

TEST(Journal, WriteThenReadBackInCompletionOrder) {
  testing::TempDir dir;
  const std::string path = dir / "journal.sqlite";
  {
    Journal j(path);
    j.set_meta("workload", "mlp");
    EXPECT_EQ(j.append(record("32", TrialStatus::ok, 0.5)), 1);
    EXPECT_EQ(j.append(record("64", TrialStatus::oom, 0.25)), 2);
  }
  Journal j(path);  // reopened: everything was committed
  EXPECT_EQ(j.meta("workload"), "mlp");
  EXPECT_EQ(j.meta("schema_version"), "1");
  EXPECT_FALSE(j.meta("created_at").empty());
  EXPECT_EQ(j.meta("absent"), "");
  const auto t = j.trials();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].id, 1);
  EXPECT_EQ(t[0].plan.config.key(), "batch_size=32");
  EXPECT_EQ(t[0].result.status, TrialStatus::ok);
  EXPECT_DOUBLE_EQ(t[0].result.windows[0].samples_per_s(), 640);
  EXPECT_EQ(t[0].stderr_tail, "warning: something\n");
  EXPECT_EQ(t[1].result.status, TrialStatus::oom);
  EXPECT_EQ(t[1].kind, TrialKind::search);
  EXPECT_EQ(t[1].finished_at, "2026-11-21T10:00:03Z");
  j.set_meta("workload", "gpt");  // upsert
  EXPECT_EQ(j.meta("workload"), "gpt");
}

TEST(Journal, RefusesForeignFilesWithoutTouchingThem) {
  testing::TempDir dir;
  const std::string path = dir / "notes.sqlite";
  write_file_atomic(path, "these are my notes, not a database\n");
  EXPECT_THROW_MSG(Journal{path}, std::runtime_error,
                   path +
                       ": damaged, not a readable journal (SQLite: file is not a database); it was left as it is: "
                       "restore a copy, or start a new run with another --out");
  EXPECT_EQ(read_file(path), "these are my notes, not a database\n");
}

TEST(Journal, ATruncatedJournalIsNamedDamagedAndLeftAsItIs) {
  testing::TempDir dir;
  const std::string path = dir / "journal.sqlite";
  {
    Journal j(path);
    for (int i = 0; i < 40; ++i) j.append(record(std::to_string(32 + i), TrialStatus::ok, 0.5));
  }
  const std::string whole = read_file(path);
  ASSERT_GT(whole.size(), 8192u);
  const std::string cut = whole.substr(0, 3000);  // the header survives, the pages it names do not
  write_file_atomic(path, cut);
  try {
    Journal j(path);
    (void)j.trials();
    ADD_FAILURE() << "a truncated journal must not read as a journal";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos);
    EXPECT_NE(msg.find("malformed"), std::string::npos) << msg;
  }
  EXPECT_EQ(read_file(path), cut) << "nothing the user had is overwritten";
}

TEST(Journal, RefusesOtherSchemaVersions) {
  testing::TempDir dir;
  const std::string path = dir / "journal.sqlite";
  { Journal(path).set_meta("schema_version", "99"); }
  EXPECT_THROW_MSG(Journal{path}, std::runtime_error,
                   path + ": journal schema version '99' is not supported; this build reads version 1");
}

// Two processes opening one new journal at once — a tuner creating its run's journal and a reader that found the file
// (a test polling it, `autotune report` on a run that just started) — both get a journal: neither fails on the other's
// half-made schema, and the schema is made once. Processes released together, many rounds, each on a new file.
TEST(Journal, ProcessesOpeningANewJournalAtOnceAllGetIt) {
  testing::TempDir dir;
  constexpr int kRounds = 30, kOpeners = 6;
  int failed = 0;
  std::string why;
  for (int round = 0; round < kRounds; ++round) {
    const std::string path = dir / ("journal-" + std::to_string(round) + ".sqlite");
    int go[2];
    ASSERT_EQ(pipe(go), 0);
    std::vector<pid_t> kids;
    for (int k = 0; k < kOpeners; ++k) {
      const pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        close(go[1]);
        char c;
        if (read(go[0], &c, 1) != 0) _exit(3);  // the pipe's close releases every opener at once
        try {
          Journal j(path);
          _exit(j.meta("schema_version") == "1" ? 0 : 2);
        } catch (const std::exception& e) {
          const std::string m = std::string(e.what()) + "\n";
          if (write(2, m.data(), m.size()) < 0) _exit(4);
          _exit(1);
        }
      }
      kids.push_back(pid);
    }
    close(go[0]);
    close(go[1]);
    for (pid_t pid : kids) {
      int st = 0;
      waitpid(pid, &st, 0);
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        ++failed;
        why = "round " + std::to_string(round) + ": exit " + std::to_string(WIFEXITED(st) ? WEXITSTATUS(st) : -1);
      }
    }
    Journal j(path);
    EXPECT_EQ(j.meta("schema_version"), "1");
    EXPECT_TRUE(j.trials().empty());
  }
  EXPECT_EQ(failed, 0) << why << " (each failing opener printed its error above)";
}

}  // namespace
}  // namespace autotune
