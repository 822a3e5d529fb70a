#pragma once
// A traced profile as plain sentences and a kernel table: the one rendering of a profile, shared by
// report.md, report.html and `autotune profile` (each escapes or indents for its own format).
#include <array>
#include <string>
#include <vector>

#include "reports/summary.h"

namespace autotune {

struct ProfileText {
  std::string title;                                ///< "Profile of the winner (cupti, 5 traced steps)"
  std::string reason;                               ///< why it is host-only, as a sentence ("" with CUPTI)
  std::vector<std::string> lines;                   ///< sentences, unescaped
  /// The top 5: name, calls, time per call, time, share, the phases that launched it, grid × block.
  std::vector<std::array<std::string, 7>> kernels;
};

/// `label` names whose profile it is ("winner"); `trace` is how to name the trace file in the text.
ProfileText profile_text(const ProfileSummary& p, const std::string& label, const std::string& trace);
/// A tuning run's traced profile; its trace file is named as it lies in the run folder (traces/NAME).
ProfileText profile_text(const TracedProfile& tp);

}  // namespace autotune
