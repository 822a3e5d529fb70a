#include "tuner/measures/journal.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>
#include <utility>

#include "knobs/error.h"

namespace autotune {

namespace {

/// How long a statement waits on another process's lock on the journal (SQLite's busy handler), and the WAL switch,
/// which SQLite does not hand to that handler, is tried again (Journal::use_wal).
constexpr int kBusyTimeoutMs = 5000;

/// Owns a prepared statement; finalizes it on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql, const std::string& path) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK)
      throw std::runtime_error(fmt::format("{}: {}", path, sqlite3_errmsg(db)));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  int step() { return sqlite3_step(s_); }
  std::string text(int col) const {
    const auto* p = sqlite3_column_text(s_, col);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  std::int64_t integer(int col) const { return sqlite3_column_int64(s_, col); }

 private:
  sqlite3_stmt* s_ = nullptr;
};

}  // namespace

std::string utc_now_iso8601() { return utc_now_formatted("%Y-%m-%dT%H:%M:%SZ"); }

std::string utc_now_formatted(const char* format) {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[128];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

Journal::Journal(const std::string& path) : path_(path) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw std::runtime_error(fmt::format("{}: cannot open journal: {}", path, msg));
  }
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  // Each trial's commit reaches the disk before the next trial starts: with WAL's default (NORMAL) a
  // power loss may take back the last commits; FULL syncs the log at every commit (one fsync per trial).
  sqlite3_exec(db_, "PRAGMA synchronous=FULL", nullptr, nullptr, nullptr);
  try {
    // A foreign file fails here ("file is not a database"), before we write anything to it.
    bool fresh = false;
    {  // scoped: an unfinalized statement holds a read transaction, and WAL mode cannot be set inside one
      Stmt probe(db_, "SELECT count(*) FROM sqlite_master", path_);
      if (probe.step() != SQLITE_ROW) fail(sqlite3_errmsg(db_));
      fresh = probe.integer(0) == 0;
    }
    if (fresh) {
      // Made once, whoever opens the new file first. Another process may open it at the same moment (a reader that
      // found the file: a test polling a run, `autotune report` on a run that just started): the write lock orders the
      // two, and the second finds the tables and the version made, in one transaction, instead of failing on them.
      use_wal();  // not inside a transaction
      exec("BEGIN IMMEDIATE");
      exec("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)");
      exec(
          "CREATE TABLE IF NOT EXISTS trials(id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, config_key TEXT NOT NULL,"
          " status TEXT NOT NULL, plan_json TEXT NOT NULL, result_json TEXT NOT NULL, outcome TEXT NOT NULL,"
          " stderr_tail TEXT NOT NULL, started_at TEXT NOT NULL, finished_at TEXT NOT NULL)");
      for (const auto& [key, value] : {std::pair<std::string, std::string>{"schema_version", std::to_string(kSchemaVersion)},
                                       {"created_at", utc_now_iso8601()}}) {
        Stmt s(db_, "INSERT OR IGNORE INTO meta(key, value) VALUES(?1, ?2)", path_);
        s.bind(1, key).bind(2, value);
        if (s.step() != SQLITE_DONE) fail(sqlite3_errmsg(db_));
      }
      exec("COMMIT");
    }
    Stmt has(db_, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name IN ('meta','trials')", path_);
    has.step();
    const bool ours = has.integer(0) == 2;
    if (!ours) throw std::runtime_error(fmt::format("{}: not an autotune journal (no meta/trials tables)", path_));
    const std::string v = meta("schema_version");
    if (v != std::to_string(kSchemaVersion))
      throw std::runtime_error(fmt::format("{}: journal schema version '{}' is not supported; this build reads version {}",
                                           path_, v, kSchemaVersion));
  } catch (const std::runtime_error& e) {
    // A damaged file (truncated, overwritten, not SQLite) is named as such and left exactly as it is.
    const int code = sqlite3_extended_errcode(db_) & 0xff;
    sqlite3_close(db_);
    db_ = nullptr;
    if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
      throw std::runtime_error(
          fmt::format("{}: damaged, not a readable journal (SQLite: {}); it was left as it is: restore "
                      "a copy, or start a new run with another --out",
                      path_, sqlite3_errstr(code)));
    throw;
  }
}

Journal::~Journal() { sqlite3_close(db_); }

void Journal::fail(const std::string& msg) const {
  // SQLite rolled the statement back: the journal still holds every earlier commit, whole.
  // SQLITE_FULL when the database file cannot grow; a WAL or shared-memory file that cannot grow is an
  // I/O error whose system errno says why.
  if (sqlite3_errcode(db_) == SQLITE_FULL || is_no_room(sqlite3_system_errno(db_)))
    throw DiskFull(path_, fmt::format("SQLite: {} ({})", msg, std::strerror(is_no_room(sqlite3_system_errno(db_))
                                                                                 ? sqlite3_system_errno(db_)
                                                                                 : ENOSPC)));
  throw std::runtime_error(fmt::format("{}: {}", path_, msg));
}

int Journal::try_exec(const std::string& sql, std::string& msg) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) msg = err ? err : "unknown error";
  sqlite3_free(err);
  return rc;
}

void Journal::exec(const std::string& sql) {
  if (std::string msg; try_exec(sql, msg) != SQLITE_OK) fail(msg);
}

void Journal::use_wal() {
  // A switch to WAL needs the file to itself: where another process opening it at the same moment holds a read lock
  // (its probe of a new file), SQLite answers SQLITE_BUSY at once, without the busy handler. Once one of them has
  // switched, the others' switches are no-ops; so the switch is tried again, for as long as the busy handler waits.
  for (int waited_ms = 0;; waited_ms += 10) {
    std::string msg;
    const int rc = try_exec("PRAGMA journal_mode=WAL", msg);
    if (rc == SQLITE_OK) return;
    if ((rc & 0xff) != SQLITE_BUSY || waited_ms >= kBusyTimeoutMs) fail(msg);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void Journal::set_meta(const std::string& key, const std::string& value) {
  Stmt s(db_, "INSERT INTO meta(key, value) VALUES(?1, ?2) ON CONFLICT(key) DO UPDATE SET value=excluded.value", path_);
  s.bind(1, key).bind(2, value);
  if (s.step() != SQLITE_DONE) fail(sqlite3_errmsg(db_));
}

std::string Journal::meta(const std::string& key) const {
  Stmt s(db_, "SELECT value FROM meta WHERE key=?1", path_);
  s.bind(1, key);
  return s.step() == SQLITE_ROW ? s.text(0) : "";
}

std::map<std::string, std::string> Journal::all_meta() const {
  std::map<std::string, std::string> m;
  Stmt s(db_, "SELECT key, value FROM meta ORDER BY key", path_);
  while (s.step() == SQLITE_ROW) m[s.text(0)] = s.text(1);
  return m;
}

std::int64_t Journal::append(const TrialRecord& rec) {
  Stmt s(db_,
         "INSERT INTO trials(kind, config_key, status, plan_json, result_json, outcome, stderr_tail, started_at, "
         "finished_at) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9)",
         path_);
  s.bind(1, to_string(rec.kind))
      .bind(2, rec.plan.config.key())
      .bind(3, to_string(rec.result.status))
      .bind(4, nlohmann::json(rec.plan).dump())
      .bind(5, nlohmann::json(rec.result).dump())
      .bind(6, rec.outcome)
      .bind(7, rec.stderr_tail)
      .bind(8, rec.started_at)
      .bind(9, rec.finished_at);
  if (s.step() != SQLITE_DONE) fail(sqlite3_errmsg(db_));
  return sqlite3_last_insert_rowid(db_);
}

std::vector<TrialRecord> Journal::trials() const {
  std::vector<TrialRecord> out;
  Stmt s(db_, "SELECT id, kind, plan_json, result_json, outcome, stderr_tail, started_at, finished_at FROM trials ORDER BY id",
         path_);
  while (s.step() == SQLITE_ROW) {
    TrialRecord r;
    r.id = s.integer(0);
    try {
      r.kind = trial_kind_from_string(s.text(1));
      r.plan = nlohmann::json::parse(s.text(2)).get<TrialPlan>();
      r.result = nlohmann::json::parse(s.text(3)).get<TrialResult>();
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("{}: trial {} is unreadable: {}", path_, r.id, e.what()));
    }
    r.outcome = s.text(4);
    r.stderr_tail = s.text(5);
    r.started_at = s.text(6);
    r.finished_at = s.text(7);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace autotune
