#pragma once
// Files a later command writes beside a tune run (a calibration by training, an lr-sweep's answer): the newest sits
// under its plain name, which the run's report reads; an earlier one is never overwritten but kept beside it, renamed
// with the date it records.
#include <string>

namespace autotune {

/// Writes `text` to TUNE_DIR/STEM.json. One already there is renamed STEM-<its "date">.json first (-2, -3, … when that
/// is taken; "earlier" when it records no date). Returns the path written.
std::string write_beside_run(const std::string& tune_dir, const std::string& stem, const std::string& text);

}  // namespace autotune
