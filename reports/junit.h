#pragma once
#include <string>

#include "reports/markup.h"
#include "reports/summary.h"

namespace autotune {

/// junit.xml: one <testsuite name="autotune.stability"> with one <testcase> per stability check of the
/// winner (a <failure> for a failed check), and a failing "winner" testcase when nothing was stable.
/// Properties (workload, winner, speedup, torch version) sit on the testsuite only: testcase-level
/// properties break the xunit2 schema. Every user-derived string is XML-escaped.
std::string render_junit(const RunSummary& s);

}  // namespace autotune
