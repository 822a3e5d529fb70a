#pragma once
// A model's weights in a file (`autotune converge --save`, `--init-from`): every named tensor of the
// workload's state (Workload::named_state) in LibTorch's own archive format (torch::serialize), so a
// noise-scale or converge trial can start where an earlier training stopped.
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

namespace autotune {

using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;

/// Writes `state` to `path` through a temporary file and a rename. Throws UsageError when `path`
/// already exists: a weights file is never overwritten.
void save_weights(const NamedTensors& state, const std::string& path);

/// Copies the tensors of `path` into `state` (same names, same shapes; values converted to each
/// tensor's dtype and device). Throws UsageError, one line, when the file is missing or unreadable, or
/// does not match the model: a name the model lacks or the file lacks, or another shape. Nothing of
/// `state` changes unless every tensor matches.
void load_weights(NamedTensors& state, const std::string& path);

}  // namespace autotune
