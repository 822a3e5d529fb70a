#pragma once
// The held-out part of converge.md / converge.html / converge.json (reports/held_out_summary.h): what the held-out set
// was, whether the fastest to the training loss is the fastest to the held-out loss, each candidate's held-out ratio,
// and each run's held-out figures.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "reports/converge_summary.h"

namespace autotune {

/// Plain sentences: the set and the verdict on the fastest, then one per comparison. Empty when no run evaluated one.
std::vector<std::string> held_out_sentences(const ConvergeSummary& s);

/// What the table's "time to" column times every run to, and, where a comparison above used another loss, that it did
/// ("" when no run evaluated one or no loss was reached by all the baseline's runs).
std::string held_out_table_note(const ConvergeSummary& s);

/// The Markdown table of each run's held-out figures ("" when none).
std::string held_out_markdown_table(const ConvergeSummary& s);

/// The same table in HTML ("" when none).
std::string held_out_html_table(const ConvergeSummary& s);

/// converge.json's "held_out" (null when no run evaluated one).
nlohmann::json held_out_json(const ConvergeSummary& s);

}  // namespace autotune
