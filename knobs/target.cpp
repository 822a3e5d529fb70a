#include "knobs/target.h"

#include "knobs/knob.h"

namespace autotune {

TargetInfo make_target(const WorkloadInfo& w, const EnvFingerprint& env, const TrialSetup& setup) {
  TargetInfo t;
  t.cuda = env.cuda_available && setup.device != "cpu";
  t.gpu_count = t.cuda ? env.device_count : 0;
  t.cpu_cores = env.cpu_cores;
  t.conv_model = w.conv_model;
  t.image_data = w.image_data;
  t.block_model = w.block_model;
  t.data = !setup.data.empty() ? (w.image_data ? "images" : "tokens") : w.task_data ? "task" : "";
  t.data_cache = !setup.data_cache.empty();
  t.defaults_of = setup.defaults_of;
  t.python_trainer = w.trainer == "python";
  t.trainer_knobs = w.knobs;
  return t;
}

std::string TargetInfo::default_of(const Knob& knob, const std::string& workload_default) const {
  return defaults_of.empty() ? knob.baseline(workload_default) : knob.pytorch_default(defaults_of, cuda, workload_default).first;
}

}  // namespace autotune
