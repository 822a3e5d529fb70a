#pragma once
// What "fastest" means in a run (docs/time-to-train.md), a tune option that the objective (ranking.h) acts on: samples/s,
// or predicted time to the same loss.
// The tuner's own type; the run summary carries only its outcome (RunSummary::by_time), so the reports never name it.
#include <string>

namespace autotune {

enum class ObjectiveKind { throughput, time };
/// "throughput" | "time".
std::string to_string(ObjectiveKind k);
/// The objective called `name`; UsageError "objective 'speed' is not allowed; allowed: time, throughput".
void from_string(const std::string& name, ObjectiveKind& k);

}  // namespace autotune
