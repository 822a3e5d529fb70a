#pragma once
// A traced profile (result.profile JSON) as plain sentences and a kernel table, shared by the
// Markdown and HTML reporters (each escapes for its own format).
#include <array>
#include <string>
#include <vector>

#include "reports/summary.h"

namespace autotune {

struct ProfileText {
  std::string title;                                ///< "Profile of the winner (cupti, 5 traced steps)"
  std::vector<std::string> lines;                   ///< sentences, unescaped
  std::vector<std::array<std::string, 4>> kernels;  ///< name, count, time, share (top 5)
};

ProfileText profile_text(const TracedProfile& p);

}  // namespace autotune
