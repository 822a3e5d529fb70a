#pragma once
// What a batch of a user's model looks like and how its loss is made: the spec a TorchScript model
// comes with (a sidecar MODEL.json next to MODEL.pt, --model-spec FILE, or the --model-* flags, which
// override the file). LibTorch-free: the tuner validates and reports it, the worker builds batches from it.
//
//   {"inputs": [{"name": "x", "shape": ["B", 3, 224, 224], "dtype": "float32", "range": [-1, 1]}],
//    "target": {"kind": "classes", "classes": 1000},          // or {"kind": "regression", "shape": ["B", 10]}
//    "loss": "cross_entropy",                                 // cross_entropy | mse | model
//    "flops_per_sample": 1.1e10,                              // optional: else counted from the forward's ops
//    "default_batch_size": 32, "description": "...",          // optional
//    "python": "torchvision.models:resnet18", "python_kwargs": {"num_classes": 10}}  // optional: how Python builds it
//
// "B" is the batch dimension: the first of every shape, and only there. int64 inputs take a "vocab" (token ids
// 0..vocab−1) instead of a range. With loss "model", forward receives the target as its last argument
// and returns the loss.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "knobs/setup.h"

namespace autotune {

struct InputSpec {
  std::string name;                 ///< for messages ("x", "idx")
  std::vector<std::int64_t> shape;  ///< -1 = the batch dimension
  std::string dtype = "float32";    ///< float32 | float16 | bfloat16 | int64
  double lo = -1, hi = 1;           ///< float inputs: uniform in [lo, hi)
  std::int64_t vocab = 0;           ///< int64 inputs: ids in [0, vocab)
};

struct TargetSpec {
  std::string kind = "none";        ///< classes | regression | none
  std::int64_t classes = 0;         ///< classes: class indices in [0, classes)
  std::vector<std::int64_t> shape;  ///< -1 = batch; classes default (B), regression required
};

struct ModelSpec {
  std::vector<InputSpec> inputs;
  TargetSpec target;
  std::string loss = "cross_entropy";  ///< cross_entropy | mse | model
  double flops_per_sample = 0;         ///< training FLOPs per sample; 0 = count from the forward's ops
  std::int64_t default_batch_size = 32;
  std::string description;
  std::string python;         ///< the Python factory the file was exported from ("module:factory" or "file.py:Class")
  std::string python_kwargs;  ///< its keyword arguments as Python source ("num_classes=10"), from a JSON object
  /// Where a factory call cannot say it (Hugging Face models built from a config): the Python lines that build
  /// `model`, and the expression of `x` (and `y`) that gives what the exported forward gives (logits or the loss).
  std::string python_build;
  std::string python_forward;
  /// "random" when the file's weights were drawn at build time (scripts/export_model.py: an hf: model, or a factory
  /// whose second build from another seed differs), "given" when they were loaded; "" when the spec does not say.
  std::string weights;
  /// What training mode keeps live in the exported module, in words ("training mode: dropout in 14 layers …").
  std::string train_mode;

  /// "x: (B, 3, 224, 224) float32 in [-1, 1); target: classes 0..999 (B); loss cross_entropy"
  std::string text() const;
};

/// Parses a spec; throws UsageError naming `where` and the field ("spec.json: inputs[0].dtype 'f32'
/// is not allowed; allowed: float32, float16, bfloat16, int64").
ModelSpec parse_model_spec(const nlohmann::json& j, const std::string& where);

/// The spec of `setup.model`: the sidecar (MODEL.json beside MODEL.pt) or `setup.model_spec`, then the
/// --model-* flags on top. Throws UsageError when there is no spec at all or it is incomplete.
ModelSpec load_model_spec(const TrialSetup& setup);

/// A model the Python worker builds (pyworker/): "hf:MODEL_TYPE", "task:train.py" (a task file, `--task`), or
/// "module:factory" / "file.py:Class" — a reference with a ':' that names no file.
bool is_python_model(const std::string& model);
/// The task file (or module) of a model reference "task:FILE" (`--task FILE`); "" for any other reference.
std::string task_of(const std::string& model);
/// The worker that trains `setup`: its `trainer`, else "python" for a Python model and "cpp" for everything else.
std::string trainer_of(const TrialSetup& setup);
/// `model` with its file part absolute (a TorchScript path, the file of file.py:Class, an hf: folder); a module
/// path or a Hugging Face model type is kept as it is.
std::string absolute_model(const std::string& model);

/// Compact forms of the flags: an input "B,3,224,224:float32[:LO..HI]" or "B,128:int64:VOCAB" (several
/// separated by ';'), a target "classes:1000[:B,128]", "regression:B,10" or "none".
std::vector<InputSpec> parse_input_flag(const std::string& text);
TargetSpec parse_target_flag(const std::string& text);

}  // namespace autotune
