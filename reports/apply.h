#pragma once
#include <string>
#include <vector>

#include "knobs/config.h"
#include "knobs/worker_info.h"
#include "reports/train_loop.h"

namespace autotune {

/// How to reproduce a config in the user's own training loop: LibTorch calls and the equivalent
/// PyTorch Python, one snippet line (or short block) per knob that differs from its baseline.
struct ApplySnippets {
  std::vector<std::string> cpp, python;
};

/// What the snippets train: a built-in workload's torch::nn::Module (`model->forward(x)`, a criterion), or the
/// user's TorchScript model, loaded from its file in C++ and built by its own Python factory, with its own loss.
struct ApplySubject {
  std::string model_file;              ///< "" = a torch::nn::Module called `model`
  std::string loss = "cross_entropy";  ///< cross_entropy | mse | model (forward returns the loss)
  std::string python_factory;          ///< "torchvision.models:resnet18" or "net.py:TinyGPT" ("" = not known)
  std::string python_kwargs;           ///< "num_classes=10"
  std::string python_build;            ///< Python lines that build `model` (instead of the factory call)
  std::string python_forward;          ///< what the exported forward computes, of x (and y); "" = model(x)
  bool sequence_target = false;        ///< (B, T) class targets: the loss flattens logits and targets
  std::string python_task;             ///< a task file (--task): the loop imports it; "" = none
  std::vector<std::string> task_functions;  ///< what it defines (model, dataset, collate, sampler, loss, optimizer)
  bool task_iterable = false;          ///< its dataset() is iterable: no shuffle
  std::string task_lightning;          ///< its model() is this LightningModule: the Trainer's arguments are printed
};
/// The subject of a workload as the worker described it.
ApplySubject apply_subject(const WorkloadInfo& w);

/// A changed global batch's learning rate to start from (the report's LR advice): the first line of both
/// snippets, which the optimizer lines then use as `lr`. lr = 0: none.
struct LrHint {
  double lr = 0;
  std::string why;  ///< one line: "AdaScale gain r = 2.9 at B̄ = 410: Adam × √r (was 1e-3 at batch 32)"
};

/// `device` is "cuda" or "cpu" (what autocast and the snippets name); `defaults` holds the run's baseline
/// values (knob → value; batch_size the workload's own): a knob at its baseline value gets no line. For a user's model the snippets start with
/// building it, its optimizer and its loss, and every later line names them.
/// `ramp` (answer (c), one process): the whole loop with grad_accum and the learning rate following its phases, the
/// micro-batch and every other knob `winner`'s (the ramp's first phase).
ApplySnippets apply_snippets(const Config& winner, const std::string& device,
                             const std::map<std::string, std::string>& defaults, const ApplySubject& subject = {},
                             const LrHint& lr = {}, const std::vector<RampStep>& ramp = {});

/// The host-heap policy every trial ran with (ConfigSummary::host_malloc), for the user's own program:
/// mallopt calls for C++, environment variables for Python. Empty unless the policy was applied
/// (`host_malloc` is host_heap::kApplied): an older worker's or a refused policy gives nothing to copy.
ApplySnippets heap_snippets(const std::string& host_malloc);
/// The sentence that introduces heap_snippets in a report (plain text; `faults_per_step` < 0: not measured).
std::string heap_note(const std::string& host_malloc, double faults_per_step);

}  // namespace autotune
