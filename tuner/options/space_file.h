#pragma once
#include <optional>
#include <string>

#include "knobs/config.h"

namespace autotune {

/// A search described in a file (`autotune tune --space FILE`), YAML or JSON:
///
///   workload: resnet18          # optional; --workload wins when both are given
///   strategy: auto              # optional: grid | random | coordinate | halving | auto
///   knobs:
///     batch_size: [32, 64, 128]
///     precision: [fp32, amp_bf16]
///
/// Unknown keys, knobs and values are UsageErrors that name the file and line ("space.yaml:4: …").
struct SpaceFile {
  std::optional<std::string> workload, strategy;
  KnobSpace space;
};
SpaceFile read_space_file(const std::string& path);

}  // namespace autotune
