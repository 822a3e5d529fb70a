#include "tuner/tune/run_folder.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tuner/exec/plan.h"
#include "tuner/exec/trial_runner.h"

namespace autotune {

namespace fs = std::filesystem;

TuneOptions prepared(const TuneOptions& in, const std::function<std::vector<std::string>()>& gpus) {
  TuneOptions opts = in;
  if (opts.worker.empty()) opts.worker = default_worker_path(opts.setup);
  if (opts.out_dir.empty()) {
    if (opts.resume) throw UsageError("--resume needs the run folder: --resume DIR");
    opts.out_dir = utc_now_formatted("runs/%Y%m%d-%H%M%S");
  }
  if (fs::exists(opts.out_dir) && !fs::is_directory(opts.out_dir))
    throw UsageError(fmt::format("--out {}: is a file; a run folder is a directory (new, or one to --resume)", opts.out_dir));
  const bool exists = fs::exists(fs::path(opts.out_dir) / "journal.sqlite");
  if (opts.resume && !exists)
    throw UsageError(fmt::format("--resume {}: no journal.sqlite there; nothing to resume", opts.out_dir));
  if (!opts.resume && exists)
    throw UsageError(
        fmt::format("{} already holds a run (journal.sqlite); pass --resume {} to continue it, or choose another --out",
                    opts.out_dir, opts.out_dir));
  // Where trials run, checked before the run folder exists; a resumed run plans its journal's slots when it starts.
  if (!opts.resume && (opts.exec.executor != ExecutorKind::local || opts.exec.parallel != 1))
    opts.exec.slot_cpus =
        check_execution(opts.exec, opts.out_dir, opts.exec.executor == ExecutorKind::local ? gpus() : std::vector<std::string>{})
            .slot_cpus();
  if (opts.space.empty()) {
    if (!opts.resume) opts.user_space = false;
    opts.space = (opts.strategy.name == "auto" || opts.strategy.name == "coordinate") ? full_space() : default_space();
  } else if (!opts.resume) {
    // Two or more batch sizes the user listed bound auto's batch search to them; one listed size is
    // where an open-ended search starts, as are the embedded spaces' sizes (docs/search.md).
    for (const auto& [k, vs] : opts.space.axes())
      if (k == "batch_size" && vs.size() >= 2) {
        opts.strategy.batch_values.clear();
        for (const auto& v : vs) opts.strategy.batch_values.push_back(std::stoll(v));
        std::sort(opts.strategy.batch_values.begin(), opts.strategy.batch_values.end());
      }
  }
  return opts;
}

Journal open_run_journal(TuneOptions& opts, std::optional<RunLock>& lock) {
  const fs::path out(opts.out_dir);
  std::error_code ec;
  fs::create_directories(out / "trials", ec);
  if (ec && is_no_room(ec.value())) throw DiskFull((out / "trials").string(), ec.message());
  if (ec) throw std::runtime_error(fmt::format("{}: cannot create the run folder: {}", (out / "trials").string(), ec.message()));
  lock.emplace(out.string(), "tune");
  // Checked again under the lock: another run may have created the journal since prepared() looked.
  if (!opts.resume && fs::exists(out / "journal.sqlite"))
    throw UsageError(
        fmt::format("{} already holds a run (journal.sqlite); pass --resume {} to continue it", opts.out_dir, opts.out_dir));
  std::optional<Journal> made;
  try {
    made.emplace((out / "journal.sqlite").string());
  } catch (const DiskFull& e) {
    if (!opts.resume) forget_new_journal(opts.out_dir, e);
    throw;
  }
  Journal journal = std::move(*made);
  if (opts.resume) {
    const std::string stored = journal.meta("options");
    if (stored.empty()) throw UsageError(fmt::format("{}: journal has no stored options; cannot resume", journal.path()));
    const double budget = opts.budget_seconds;
    const std::string run_length = opts.run_length;
    options_from_json(nlohmann::json::parse(stored), opts);
    opts.budget_seconds = budget;  // the budget is per invocation
    if (!run_length.empty()) opts.run_length = run_length;  // so is the run's length: it prices, it does not measure
  }
  return journal;
}

void forget_new_journal(const std::string& out_dir, const DiskFull& e) {
  for (const char* f : {"journal.sqlite", "journal.sqlite-wal", "journal.sqlite-shm"}) fs::remove(fs::path(out_dir) / f);
  throw DiskFull(e.path(), e.why() + "; nothing was kept: make room, then run the same command again");
}

}  // namespace autotune
