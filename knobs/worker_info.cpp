#include "knobs/worker_info.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "knobs/json_get.h"

namespace autotune {

using nlohmann::json;

void to_json(json& j, const EnvFingerprint& e) {
  j = json{{"torch_version", e.torch_version}, {"cuda_compiled", e.cuda_compiled}, {"cuda_available", e.cuda_available},
           {"device_count", e.device_count},   {"device_name", e.device_name},     {"driver", e.driver},
           {"cpu_cores", e.cpu_cores},         {"hostname", e.hostname},           {"autotune_version", e.autotune_version}};
  if (!e.cpu_model.empty()) j["cpu_model"] = e.cpu_model;  // absent in older files: kept out when unknown
  if (!e.python.empty()) j["python"] = e.python;            // the Python worker's only
  if (!e.python_version.empty()) j["python_version"] = e.python_version;
}
void from_json(const json& j, EnvFingerprint& e) {
  get_opt(j, "torch_version", e.torch_version);
  get_opt(j, "cuda_compiled", e.cuda_compiled);
  get_opt(j, "cuda_available", e.cuda_available);
  get_opt(j, "device_count", e.device_count);
  get_opt(j, "device_name", e.device_name);
  get_opt(j, "driver", e.driver);
  get_opt(j, "cpu_cores", e.cpu_cores);
  get_opt(j, "hostname", e.hostname);
  get_opt(j, "autotune_version", e.autotune_version);
  get_opt(j, "cpu_model", e.cpu_model);
  get_opt(j, "python", e.python);
  get_opt(j, "python_version", e.python_version);
}

void to_json(json& j, const WorkloadInfo& w) {
  j = json{{"name", w.name},
           {"description", w.description},
           {"default_batch_size", w.default_batch_size},
           {"flops_per_sample", w.flops_per_sample},
           {"loss", w.loss},
           {"data", w.data},
           {"conv_model", w.conv_model},
           {"image_data", w.image_data},
           {"block_model", w.block_model},
           {"default_image_size", w.default_image_size}};
  // Only a user's model has these: built-in workloads keep the JSON they always had.
  if (!w.source.empty()) j["source"] = w.source;
  if (!w.batch_spec.empty()) j["batch_spec"] = w.batch_spec;
  if (!w.flops_basis.empty()) j["flops_basis"] = w.flops_basis;
  if (!w.model_file.empty()) j["model_file"] = w.model_file;
  if (!w.python_factory.empty()) j["python_factory"] = w.python_factory;
  if (!w.python_kwargs.empty()) j["python_kwargs"] = w.python_kwargs;
  if (!w.python_build.empty()) j["python_build"] = w.python_build;
  if (!w.python_forward.empty()) j["python_forward"] = w.python_forward;
  if (!w.python_task.empty()) j["python_task"] = w.python_task;
  if (!w.task_functions.empty()) j["task_functions"] = w.task_functions;
  if (w.task_iterable) j["task_iterable"] = true;
  if (!w.task_lightning.empty()) j["task_lightning"] = w.task_lightning;
  if (w.task_data) j["task_data"] = true;
  if (!w.held_out.empty()) j["held_out"] = w.held_out;
  if (!w.optimizer.empty()) j["optimizer"] = w.optimizer;
  if (!w.optimizer_family.empty()) j["optimizer_family"] = w.optimizer_family;
  if (w.optimizer_lr > 0) j["optimizer_lr"] = w.optimizer_lr;
  if (w.random_weights) j["random_weights"] = true;
  if (!w.train_mode.empty()) j["train_mode"] = w.train_mode;
  if (w.batch_norms >= 0) j["batch_norms"] = w.batch_norms;
  if (w.token_vocab) j["token_vocab"] = w.token_vocab;
  if (w.block_size) j["block_size"] = w.block_size;
  if (w.parameters) j["parameters"] = w.parameters;
  if (w.parameter_tensors) j["parameter_tensors"] = w.parameter_tensors;
  if (!w.trainer.empty()) j["trainer"] = w.trainer;
  if (!w.knobs.empty()) j["knobs"] = w.knobs;
}
void from_json(const json& j, WorkloadInfo& w) {
  j.at("name").get_to(w.name);
  get_opt(j, "description", w.description);
  get_opt(j, "default_batch_size", w.default_batch_size);
  get_opt(j, "flops_per_sample", w.flops_per_sample);
  get_opt(j, "loss", w.loss);
  get_opt(j, "data", w.data);
  get_opt(j, "conv_model", w.conv_model);
  get_opt(j, "image_data", w.image_data);
  get_opt(j, "block_model", w.block_model);
  get_opt(j, "default_image_size", w.default_image_size);
  get_opt(j, "source", w.source);
  get_opt(j, "batch_spec", w.batch_spec);
  get_opt(j, "flops_basis", w.flops_basis);
  get_opt(j, "model_file", w.model_file);
  get_opt(j, "python_factory", w.python_factory);
  get_opt(j, "python_kwargs", w.python_kwargs);
  get_opt(j, "python_build", w.python_build);
  get_opt(j, "python_forward", w.python_forward);
  get_opt(j, "python_task", w.python_task);
  get_opt(j, "task_functions", w.task_functions);
  get_opt(j, "task_iterable", w.task_iterable);
  get_opt(j, "task_lightning", w.task_lightning);
  get_opt(j, "task_data", w.task_data);
  get_opt(j, "held_out", w.held_out);
  get_opt(j, "optimizer", w.optimizer);
  get_opt(j, "optimizer_family", w.optimizer_family);
  get_opt(j, "optimizer_lr", w.optimizer_lr);
  get_opt(j, "random_weights", w.random_weights);
  get_opt(j, "train_mode", w.train_mode);
  get_opt(j, "batch_norms", w.batch_norms);
  get_opt(j, "token_vocab", w.token_vocab);
  get_opt(j, "block_size", w.block_size);
  get_opt(j, "parameters", w.parameters);
  get_opt(j, "parameter_tensors", w.parameter_tensors);
  get_opt(j, "trainer", w.trainer);
  get_opt(j, "knobs", w.knobs);
}

bool own_optimizer(const WorkloadInfo& w) {
  return std::find(w.task_functions.begin(), w.task_functions.end(), "optimizer") != w.task_functions.end() &&
         w.optimizer_lr > 0;
}

bool lr_rule_known(const std::string& family) { return family.empty() || family == "sgd" || family == "adam"; }

double lr_at_gain(double lr, double r, const std::string& family) {
  if (family == "sgd") return lr * r;
  return lr_rule_known(family) ? lr * std::sqrt(r) : lr;
}

double trained_lr(const TrialSetup& setup, const WorkloadInfo& w) {
  if (!own_optimizer(w)) return setup.learning_rate();
  return w.optimizer_lr * (setup.lr_scale > 0 ? setup.lr_scale : 1.0);
}

void set_trained_lr(TrialSetup& setup, const WorkloadInfo& w, double lr) {
  if (own_optimizer(w)) setup.lr_scale = lr / w.optimizer_lr;
  else setup.lr = lr;
}

}  // namespace autotune
