#pragma once
// A tuning run's folder (docs/outputs.md): checked before anything is created, then created — or opened again to
// resume — with its lock (one writer per folder, tuner/exec/run_lock.h) and its journal. Nothing the user had is
// overwritten: a folder that holds a run needs --resume, and a new run that could not store its options leaves no
// journal behind.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "knobs/error.h"
#include "tuner/exec/run_lock.h"
#include "tuner/measures/journal.h"
#include "tuner/options/tune_options.h"

namespace autotune {

/// The options with their defaults filled in (worker, output folder, space), checked before anything is created:
/// the run folder (a new run never reuses a folder that holds one; a resumed one must hold one) and, for a new run,
/// where its trials run (tuner/exec/plan.h: a bad slot count or a missing srun is one line), which also fixes the
/// CPUs of one slot. `gpus()` names the GPUs local slots may hand out (asked only for --parallel > 1).
TuneOptions prepared(const TuneOptions& in, const std::function<std::vector<std::string>()>& gpus);

/// Creates DIR/trials, takes the run's lock (held in `lock` for the run's life) and opens DIR/journal.sqlite —
/// created for a new run; for a resumed one its stored options replace `opts`, keeping this invocation's budget.
/// Throws UsageError when another run created the journal meanwhile, or a resumed one has no stored options.
Journal open_run_journal(TuneOptions& opts, std::optional<RunLock>& lock);

/// A new run that ran out of room before its options were stored has nothing to resume: its journal (created by
/// this very run, the folder held none) is removed so that the same command can be run again once there is room.
[[noreturn]] void forget_new_journal(const std::string& out_dir, const DiskFull& e);

}  // namespace autotune
