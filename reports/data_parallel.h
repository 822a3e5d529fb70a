#pragma once
// The data-parallel figures of a run, for the Markdown and HTML reports: every measured config with
// ranks > 1, its scaling against the same config in one process, and where its communication went.
#include <string>
#include <vector>

#include "reports/summary.h"

namespace autotune {

struct DataParallelRow {
  std::string config;       ///< the knobs that differ from the baseline
  int ranks = 1;
  std::string backend;      ///< gloo | nccl
  double samples_per_s = 0;  ///< global (all ranks)
  /// global ÷ (ranks × the same config in one process); 0 when that config was not measured
  double scaling_efficiency = 0;
  std::string one_rank_config;  ///< the one-process config compared with
  double step_ms = 0;           ///< slowest rank's mean step
  double comm_ms_per_step = 0;  ///< mean over ranks
  double hidden_share = 0;      ///< communication overlapped with backward (0..1)
  bool comm_timed = true;       ///< false (NCCL): the two above are unknown; the profile has them
  double collectives_per_step = 0;
  double mb_per_step = 0;  ///< bytes communicated per step and rank, MB
  std::string buckets;     ///< "3 (1.96, 27.5, 15.1 MB)"
};

/// The communication and hidden cells of a row: "4.0 ms", "75%"; where the host could not time the
/// collectives (NCCL), what to read instead.
std::string comm_cell(const DataParallelRow& r);
std::string hidden_cell(const DataParallelRow& r);

/// One row per measured config with ranks > 1, fastest first.
std::vector<DataParallelRow> data_parallel_rows(const RunSummary& s);

}  // namespace autotune
