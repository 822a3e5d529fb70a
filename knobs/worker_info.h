#pragma once
// What a worker reports about itself: the machine it runs on (`autotune-worker info --json`, and
// every result's `env`) and the workloads it can train (`autotune-worker workloads --json`). Plain
// data, so the tuner decides which knobs apply without linking LibTorch.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>

#include "knobs/setup.h"

namespace autotune {

/// Where a trial ran. Recorded in every result; reports embed it; comparisons require it to match.
struct EnvFingerprint {
  std::string torch_version;  ///< e.g. "2.11.0" (compiled against)
  std::string cuda_compiled;  ///< CUDA version torch was built with, "" for CPU-only builds
  bool cuda_available = false;
  int device_count = 0;
  std::string device_name;  ///< GPU name (device 0) when a CUDA device is usable, else the CPU model
  std::string driver;       ///< CUDA driver version ("13.0"), "" when none
  std::string cpu_model;    ///< the CPU model on every machine ("" from older workers)
  int cpu_cores = 0;        ///< logical CPUs this process may use
  std::string hostname;
  std::string autotune_version;
  std::string python;          ///< the Python worker's interpreter (sys.executable); "" from the C++ worker
  std::string python_version;  ///< e.g. "3.11.2"; "" from the C++ worker
};

/// What a workload is, as the worker reports it.
struct WorkloadInfo {
  std::string name;
  std::string description;
  std::int64_t default_batch_size = 0;
  double flops_per_sample = 0;  ///< forward + backward, for MFU
  std::string loss;             ///< e.g. "cross_entropy"
  std::string data;             ///< e.g. "synthetic (generated in the worker)"
  bool conv_model = false;
  bool image_data = false;
  bool block_model = false;             ///< built of blocks: activation checkpointing applies
  std::int64_t default_image_size = 0;  ///< image workloads: side of the square input (0 otherwise)
  // A user's model (empty for the built-in workloads):
  std::string source;            ///< "TorchScript model /path/m.pt (sha256 ab12…)" or "plugin libx.so"
  std::string batch_spec;        ///< the batch spec in words (knobs/model_spec.h)
  std::string flops_basis;       ///< where flops_per_sample comes from: "counted from the forward's ops" | "given in the spec"
  std::string model_file;        ///< a TorchScript model: its path (the how-to-apply snippets load it)
  std::string python_factory;    ///< how Python builds it, if the spec says ("torchvision.models:resnet18")
  std::string python_kwargs;     ///< the factory's keyword arguments as Python source ("num_classes=10")
  std::string python_build;      ///< Python lines that build `model`, where a factory call cannot (knobs/model_spec.h)
  std::string python_forward;    ///< the Python expression of x (and y) the exported forward computes
  /// A task file (`--task train.py`, pyworker/autotune_pyworker/task.py): its absolute path, whether its dataset()
  /// is the data (real data: the loader knobs apply, its noise scale is the user's), and its optimizer's class and
  /// family ("sgd", "adam" or "unknown": the learning-rate rule of time to train).
  std::string python_task;
  std::vector<std::string> task_functions;  ///< what the task file defines: model, dataset, collate, sampler, loss, optimizer
  bool task_iterable = false;               ///< its dataset() is an IterableDataset (no shuffle, no sampler)
  std::string task_lightning;               ///< its model() is a LightningModule: the class's name ("" = not one)
  bool task_data = false;
  /// Its held-out samples, in words, where it has some (a task's val_dataset(), a LightningModule's val_dataloader()):
  /// converge then evaluates the held-out loss unless told not to ("" = none).
  std::string held_out;
  std::string optimizer, optimizer_family;
  double optimizer_lr = 0;  ///< its first param group's learning rate as optimizer() builds it (0: AdamW at --lr)
  bool random_weights = false;   ///< a model file whose weights were drawn at export, not trained (knobs/model_spec.h)
  std::string train_mode;        ///< what training mode keeps live in a model file, in words ("" when not recorded)
  /// Layers that normalize by each forward's own batch statistics in training mode (BatchNorm, SyncBatchNorm): the
  /// model's training loss then depends on the batch a forward sees. -1: not counted (a plugin that does not say, a
  /// journal written before the count); the built-in workloads, TorchScript files and Python models are counted.
  int batch_norms = -1;
  std::int64_t token_vocab = 0;  ///< token workloads: the vocabulary a --data token file must fit (0: none)
  std::int64_t block_size = 0;   ///< token workloads: the sequence length (0: none)
  /// The trainable parameters' elements and tensors, counted from the built model (`autotune-worker describe
  /// --parameters`; 0 when not asked): what a noise log's model must match (tuner/pricing/noise_log.h).
  std::int64_t parameters = 0;
  int parameter_tensors = 0;
  /// Which worker trains it: "" the C++ worker (LibTorch), "python" the Python worker (pyworker/). `knobs`: the
  /// knobs a worker says it applies (empty: every knob the catalog's rules let its worker apply, knobs/knob.h
  /// Requirement; the Python worker names none, and a run journaled before it stopped naming them keeps its list).
  std::string trainer;
  std::vector<std::string> knobs;
};

/// The learning rate a trial of `setup` trains at: a task's own optimizer()'s (WorkloadInfo::optimizer_lr, times
/// setup.lr_scale where converge moved it with the batch), else AdamW's --lr (TrialSetup::learning_rate).
double trained_lr(const TrialSetup& setup, const WorkloadInfo& w);
/// Sets the rate a trial of `setup` trains at to `lr`, trained_lr's inverse: a task's own optimizer() keeps its rate and
/// the trial scales it (setup.lr_scale = lr ÷ its rate), any other trains at --lr = lr.
void set_trained_lr(TrialSetup& setup, const WorkloadInfo& w, double lr);
/// Whether the user's optimizer is a task's own optimizer() (its lr, not --lr, is the one the advice scales).
bool own_optimizer(const WorkloadInfo& w);
/// Whether an optimizer family (WorkloadInfo::optimizer_family; "" = the built-in workloads' AdamW) has a learning-rate
/// rule for a changed batch: SGD-like and Adam-like do, any other does not (none is invented).
bool lr_rule_known(const std::string& family);
/// `lr` moved by the family's rule for AdaScale's gain `r`: SGD-like × r, Adam-like × √r; unchanged without a rule.
double lr_at_gain(double lr, double r, const std::string& family);

void to_json(nlohmann::json& j, const EnvFingerprint& e);
void from_json(const nlohmann::json& j, EnvFingerprint& e);
void to_json(nlohmann::json& j, const WorkloadInfo& w);
void from_json(const nlohmann::json& j, WorkloadInfo& w);

}  // namespace autotune
