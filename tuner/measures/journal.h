#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "knobs/record.h"

struct sqlite3;

namespace autotune {

/// journal.sqlite: every finished trial, committed the moment it completes, plus run metadata.
/// A tuner killed with SIGKILL loses at most the trial in flight; `--resume` reads the rest back.
///
/// Schema (version 1, recorded in meta.schema_version):
///   meta(key TEXT PRIMARY KEY, value TEXT)           -- workload, space, options, created_at, …
///   trials(id INTEGER PRIMARY KEY AUTOINCREMENT,     -- completion order
///          kind TEXT, config_key TEXT, status TEXT,
///          plan_json TEXT, result_json TEXT,         -- plan.json / result.json as exchanged
///          outcome TEXT, stderr_tail TEXT, started_at TEXT, finished_at TEXT)
class Journal {
 public:
  static constexpr int kSchemaVersion = 1;

  /// Opens (creating when absent) `path`. Throws std::runtime_error naming the file when it is not
  /// an autotune journal or has a schema version this build does not read.
  explicit Journal(const std::string& path);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;
  /// Moving hands over the open database; the moved-from journal holds none.
  Journal(Journal&& other) noexcept : path_(std::move(other.path_)), db_(std::exchange(other.db_, nullptr)) {}

  void set_meta(const std::string& key, const std::string& value);
  /// "" when the key is absent.
  std::string meta(const std::string& key) const;
  std::map<std::string, std::string> all_meta() const;

  /// Appends and commits one trial; returns its id (also stored in rec.id by the caller if wanted).
  std::int64_t append(const TrialRecord& rec);
  /// Every trial in completion order.
  std::vector<TrialRecord> trials() const;

  const std::string& path() const { return path_; }

 private:
  void exec(const std::string& sql);
  int try_exec(const std::string& sql, std::string& msg);  ///< SQLite's result code; its message in `msg` where it failed
  void use_wal();  ///< PRAGMA journal_mode=WAL, tried again while another opener of a new file holds it
  /// Throws the last SQLite error: DiskFull for SQLITE_FULL, else std::runtime_error naming the file.
  [[noreturn]] void fail(const std::string& msg) const;
  std::string path_;
  sqlite3* db_ = nullptr;
};

/// Current UTC time as "2026-11-21T13:45:07Z".
std::string utc_now_iso8601();
/// Current UTC time through strftime's `format` ("runs/%Y%m%d-%H%M%S" → "runs/20261121-134507").
std::string utc_now_formatted(const char* format);

}  // namespace autotune
