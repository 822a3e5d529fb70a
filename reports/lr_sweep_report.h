#pragma once
// lr-sweep.md and lr-sweep.json: a learning-rate sweep (reports/lr_sweep_summary.h) as the user reads it and as a
// program does.
#include <nlohmann/json.hpp>
#include <string>

#include "reports/lr_sweep_summary.h"

namespace autotune {

/// A multiple of the user's rate as every line prints it: "×3", "×1/3", "×0.7".
std::string lr_multiple_text(double m);

/// The verdict's one line: "Your learning rate 0.001 is too low: ×3 (0.003) reached its loss 2.0× sooner (1.9–2.1×, 2
/// data orders)."
std::string lr_sweep_headline(const LrSweepSummary& s);

std::string render_lr_sweep_markdown(const LrSweepSummary& s);
nlohmann::json render_lr_sweep_json(const LrSweepSummary& s);

}  // namespace autotune
