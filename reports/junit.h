#pragma once
#include <string>

#include "reports/summary.h"

namespace autotune {

/// junit.xml: one <testsuite name="autotune.stability"> with one <testcase> per stability check of the
/// winner (a <failure> for a failed check), and a failing "winner" testcase when nothing was stable.
/// Properties (workload, winner, speedup, torch version) sit on the testsuite only: testcase-level
/// properties break the xunit2 schema. Every user-derived string is XML-escaped.
std::string render_junit(const RunSummary& s);

/// &, <, >, " and ' as XML entities; control characters other than tab/newline dropped.
std::string xml_escape(const std::string& text);

}  // namespace autotune
