#pragma once
#include <torch/torch.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "knobs/protocol.h"
#include "tests/support/temp_dir.h"

namespace autotune::testing {

/// tests/golden/engine_golden.json, written by tests/golden/make_golden.py from torch 2.11.0's Python API.
inline const nlohmann::json& golden() {
  static const nlohmann::json g = nlohmann::json::parse(read_file(source_dir() + "/tests/golden/engine_golden.json"));
  return g;
}

/// A float32 tensor from a flat JSON list and a shape.
inline torch::Tensor tensor(const nlohmann::json& values, const std::vector<int64_t>& shape) {
  const auto v = values.get<std::vector<double>>();
  return torch::tensor(v, torch::kFloat64).to(torch::kFloat32).reshape(shape);
}

}  // namespace autotune::testing
