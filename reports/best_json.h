#pragma once
#include <nlohmann/json.hpp>

#include "reports/summary.h"

namespace autotune {

inline constexpr const char* kBestSchema = "autotune.best/1";

/// best.json (schema autotune.best/1, documented in docs/outputs.md): the winner's config,
/// throughput with its 95% CI, baseline and speedup, every stability check with its numbers, the
/// confirmation, the environment, and what the search did and did not cover.
nlohmann::json render_best_json(const RunSummary& s);

}  // namespace autotune
