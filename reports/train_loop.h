#pragma once
// The one-process training loop of a config, whole, in C++ and in Python: what `autotune apply` and the reports
// print when a config changes how the step runs (batch, autocast, optimizer, zero_grad, accumulation, loss
// logging, threads), so that the snippet runs as printed instead of leaving the user to fit fragments together.
// In C++ the data-parallel loop is this one too, per rank, with c10d's Reducer in it (Python's is reports/apply.cpp's
// data_parallel, around DistributedDataParallel); single settings that are one line anywhere
// before the loop (tf32, cudnn.benchmark, channels_last, the data loader's) stay fragments there.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "knobs/converge.h"

namespace autotune {

/// Data parallel (ranks > 1): the Reducer's settings, as the DDP knobs name them (knobs/knob.cpp).
struct DdpLoop {
  int ranks = 2;
  int bucket_mb = 25, first_bucket_mb = 1;
  bool grad_as_bucket_view = false, static_graph = false, broadcast_buffers = true;
  std::string comm_hook = "none";  ///< none | fp16 | bf16
  std::string global;              ///< the global batch in words ("8 per process × 2 processes = 16")
};

/// A task's data-parallel job in Python (ranks > 1): DistributedDataParallel around the task's model.
struct TaskDdp {
  std::string ranks;     ///< processes
  std::string backend;   ///< gloo | nccl
  std::string args;      ///< DDP's keyword arguments for the config's Reducer settings ("" = its defaults)
  std::string before;    ///< lines before the model is wrapped (the first bucket's size)
  std::string after;     ///< lines after it (the comm hook; torch.compile around DDP)
  std::string global;    ///< the global batch in words
};

struct LoopSpec {
  std::string device = "cpu";  ///< cpu | cuda
  /// The user's TorchScript file (loaded by the C++ loop; the Python loop builds the model in `py_setup`); "" = a
  /// torch::nn::Module the C++ loop takes as `model` (a built-in workload).
  std::string model_file;
  std::string loss = "cross_entropy";  ///< cross_entropy | mse | model (forward(x, y) returns the loss)
  /// The loss of inputs X and targets Y, each language's own expression.
  std::function<std::string(const std::string&, const std::string&)> cpp_loss, py_loss;
  std::string py_setup;  ///< Python lines that build `model`, `optimizer` and (unless the model returns it) `criterion`
  std::string batch;     ///< samples per step; "" = the script's own `batch_size`
  std::string threads;   ///< intra-op threads; "" = PyTorch's default
  std::string precision = "fp32";  ///< fp32 | amp_bf16 | amp_fp16
  std::string optimizer_impl;      ///< loop | foreach | fused ("" = loop in C++: torch::optim::AdamW)
  std::string zero_grad = "none";  ///< none (set_to_none, PyTorch's default) | zeros
  int grad_accum = 1;              ///< micro-batches per optimizer step
  int log_every = 1;               ///< steps per loss read (one device sync each)
  bool channels_last = false;      ///< memory_format=channels_last: the 4-D parameters and each batch converted
  std::string compile;             ///< torch.compile's mode (Python only); "" = eager
  /// Python's DataLoader settings (num_workers, prefetch_factor, pin_memory; "" = DataLoader's default). The C++ loop
  /// trains on tensors in memory: autotune's own loader is a fragment of its own there.
  std::string num_workers, prefetch, pin_memory;
  std::string what;                ///< the config in words, for the first line
  std::optional<DdpLoop> ddp;      ///< one rank of a data-parallel job (C++ only: Python's is DistributedDataParallel)
  /// A batch ramp (one process): the micro-batch stays `batch`, grad_accum and the learning rate follow the phases,
  /// each switched after the optimizer step that reaches its sample count; grad_accum is then ignored.
  std::vector<RampStep> ramp;
  /// A task file (--task): the Python loop imports it and trains its model() on its dataset() with its collate(),
  /// sampler(), loss() and optimizer() where it defines them (`task_functions`), else the defaults the Python worker
  /// trained with; `py_setup` and `py_loss` are then unused. An iterable dataset takes no shuffle.
  std::string task;
  std::vector<std::string> task_functions;
  bool task_iterable = false;
  /// The task's model() is this LightningModule: the script fits it with Lightning's Trainer, the config carried by
  /// the Trainer's arguments and its DataLoader's (a datamodule() beside it when the task defines one).
  std::string task_lightning;
  bool lr_line = false;  ///< a task's loop follows a learning-rate line (`lr = …`, a changed batch's): its optimizer takes it
  /// A task trained by several processes: one rank's whole script — the process group from the launcher's
  /// environment, DDP around task.model(), the task's optimizer on its parameters, each rank its share of the dataset
  /// (DistributedSampler, unless the task has its sampler()), the micro-batches before a step's last under no_sync —
  /// as the Python worker trains it.
  std::optional<TaskDdp> task_ddp;
};

/// A C++ function `train(inputs, targets, lr, epochs)` (with a `model` argument first for a torch::nn::Module) that
/// trains one process on in-memory tensors (a row per sample), whole: includes, optimizer state, the loop. With `ddp`,
/// one rank of the job: the process group from the launcher's environment, rank 0's weights broadcast, this rank's
/// share of each epoch's shuffle, and c10d::Reducer averaging the gradients in the last micro-batch's backward.
std::string cpp_train_loop(const LoopSpec& s);

/// Python lines that train one process given `torch`, `lr`, `epochs` and `dataset` (pairs of x, y); for a task
/// (LoopSpec::task), a whole script that imports the task file and needs nothing else.
std::string py_train_loop(const LoopSpec& s);

}  // namespace autotune
