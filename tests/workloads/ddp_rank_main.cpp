// ddp_rank: one rank of a data-parallel run of a built-in workload, driven through the worker's own
// engine (Stepper, DataParallel), for tests/workloads/ddp_test.cpp.
//
//   ddp_rank OUT WORKLOAD STEPS [knob=value ...]
//
// With WORLD_SIZE > 1 in the environment it joins the other ranks (Gloo; OUT gets the suffix .rankR) and averages gradients with
// c10d's Reducer; with AUTOTUNE_SHARD=R/W and no WORLD_SIZE it trains alone on shard R of W (the local
// gradients a rank would compute, no communication). STEPS > 0: that many optimizer steps, then OUT
// holds every parameter (float32, concatenated). STEPS = 0: one forward and backward, OUT holds the
// gradients.
#include <torch/torch.h>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "knobs/resolve.h"
#include "profiler/step_timer.h"
#include "workloads/engine/dist/ddp.h"
#include "workloads/engine/dist/process_group.h"
#include "workloads/engine/optim.h"
#include "workloads/engine/stepper.h"
#include "workloads/registry.h"

using namespace autotune;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: ddp_rank OUT WORKLOAD STEPS [knob=value ...]\n";
    return 2;
  }
  try {
    torch::set_num_threads(1);
    TrialPlan plan;
    plan.setup.workload = argv[2];
    plan.setup.device = "cpu";
    plan.setup.image_size = 32;
    for (int i = 4; i < argc; ++i) plan.config.set_assignment(argv[i]);
    const int steps = std::atoi(argv[3]);
    const auto denv = dist::DistEnv::from_environment();
    auto w = make_workload(plan.setup);
    TargetInfo target;
    target.cpu_cores = 2;
    target.conv_model = w->info().conv_model;
    target.block_model = true;
    Config cfg = plan.config;
    if (denv.distributed()) cfg.set("ranks", std::to_string(denv.world));
    const Settings s = resolve(cfg, w->info(), target).settings;
    BuildOptions bo{plan.setup, s, torch::kCPU};
    bo.rank = denv.rank;
    bo.world = denv.world;
    if (const char* sh = std::getenv("AUTOTUNE_SHARD")) std::sscanf(sh, "%d/%d", &bo.rank, &bo.world);
    w->build(bo);
    w->to_device(torch::kCPU);
    std::unique_ptr<dist::Group> g;
    std::unique_ptr<dist::DataParallel> ddp;
    if (denv.distributed()) {
      g = std::make_unique<dist::Group>(dist::join(denv, torch::kCPU, std::chrono::seconds(60)));
      ddp = std::make_unique<dist::DataParallel>(*g, w->parameters(), w->buffers(), dist::DdpOptions::from(s));
    }
    std::vector<torch::Tensor> out;
    if (steps == 0) {
      const Batch b = w->next_batch(s.batch_size);
      if (ddp) ddp->before_forward(0, 1);
      auto loss = w->loss(b);
      if (ddp) ddp->before_backward(0, 1);
      loss.backward();
      if (ddp) ddp->after_backward(0, 1);
      for (const auto& p : w->parameters()) out.push_back(p.grad().detach().reshape(-1));
    } else {
      auto opt = make_adamw(s.optimizer_impl, w->parameters(), AdamWOptions{});
      SteadyClock clock;
      StepTimer timer(clock);
      Stepper st(*w, *opt, torch::kCPU, s, timer);
      if (ddp) st.attach(ddp.get());
      for (int i = 0; i < steps; ++i) st.step();
      for (const auto& p : w->parameters()) out.push_back(p.detach().reshape(-1));
    }
    const auto flat = torch::cat(out).to(torch::kFloat32).contiguous();
    const std::string path = denv.distributed() ? std::string(argv[1]) + ".rank" + std::to_string(denv.rank) : argv[1];
    std::ofstream f(path, std::ios::binary);
    f.write(static_cast<const char*>(flat.data_ptr()), static_cast<std::streamsize>(flat.nbytes()));
    return f ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "ddp_rank: " << e.what() << "\n";
    return 1;
  }
}
