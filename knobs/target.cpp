#include "knobs/target.h"

namespace autotune {

TargetInfo make_target(const WorkloadInfo& w, const EnvFingerprint& env, const TrialSetup& setup) {
  TargetInfo t;
  t.cuda = env.cuda_available && setup.device != "cpu";
  t.gpu_count = t.cuda ? env.device_count : 0;
  t.cpu_cores = env.cpu_cores;
  t.conv_model = w.conv_model;
  t.image_data = w.image_data;
  t.block_model = w.block_model;
  t.data = setup.data.empty() ? "" : (w.image_data ? "images" : "tokens");
  t.data_cache = !setup.data_cache.empty();
  return t;
}

}  // namespace autotune
