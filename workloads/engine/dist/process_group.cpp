#include "workloads/engine/dist/process_group.h"

#include <fmt/format.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "knobs/error.h"
#include "workloads/engine/dist/backends.h"
#include "workloads/engine/dist/rendezvous.h"

namespace autotune::dist {

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

int env_int(const char* name, int fallback) {
  const char* v = env(name);
  if (!v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < 0 || x > 1'000'000)
    throw UsageError(fmt::format("environment variable {}='{}' is not a non-negative integer", name, v));
  return static_cast<int>(x);
}

std::int64_t payload(const std::vector<at::Tensor>& ts) {
  std::int64_t b = 0;
  for (const auto& t : ts) b += static_cast<std::int64_t>(t.nbytes());
  return b;
}

/// Forwards every collective the Reducer and the engine use to the real backend, and records when each
/// started and when its Work's future completed. Anything not forwarded fails loudly (Backend's default).
class RecordingBackend : public c10d::Backend {
 public:
  RecordingBackend(c10::intrusive_ptr<c10d::Backend> inner, std::shared_ptr<CommRecorder> rec)
      : Backend(inner->getRank(), inner->getSize()), inner_(std::move(inner)), rec_(std::move(rec)) {}
  const std::string getBackendName() const override { return inner_->getBackendName(); }

  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& t, const c10d::AllreduceOptions& o) override {
    return track("allreduce", payload(t), inner_->allreduce(t, o));
  }
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& t,
                                                     const c10d::AllreduceCoalescedOptions& o) override {
    return track("allreduce", payload(t), inner_->allreduce_coalesced(t, o));
  }
  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& t, const c10d::BroadcastOptions& o) override {
    return track("broadcast", payload(t), inner_->broadcast(t, o));
  }
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& out, std::vector<at::Tensor>& in,
                                           const c10d::AllgatherOptions& o) override {
    return track("allgather", payload(in), inner_->allgather(out, in, o));
  }
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& out, at::Tensor& in, const c10d::AllgatherOptions& o) override {
    return track("allgather", static_cast<std::int64_t>(in.nbytes()), inner_->_allgather_base(out, in, o));
  }
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& o) override { return inner_->barrier(o); }

 private:
  c10::intrusive_ptr<c10d::Work> track(const char* op, std::int64_t bytes, c10::intrusive_ptr<c10d::Work> w) {
    const std::uint64_t id = rec_->launched(op, bytes);
    if (id != CommRecorder::kNotRecorded) {
      auto rec = rec_;
      w->getFuture()->addCallback([rec, id](c10::ivalue::Future&) { rec->complete(id); });
    }
    return w;
  }
  c10::intrusive_ptr<c10d::Backend> inner_;
  std::shared_ptr<CommRecorder> rec_;
};

}  // namespace

DistEnv DistEnv::from_environment() {
  DistEnv e;
  if (env("WORLD_SIZE")) {
    e.world = std::max(1, env_int("WORLD_SIZE", 1));
    e.rank = env_int("RANK", 0);
    e.local_rank = env_int("LOCAL_RANK", e.rank);
    e.local_world = std::max(1, env_int("LOCAL_WORLD_SIZE", e.world));
    e.launcher = env("AUTOTUNE_STORE_FD") || env("AUTOTUNE_LAUNCHER") ? "autotune"
                 : env("TORCHELASTIC_RUN_ID")                         ? "torchrun"
                                                                      : "env";
  } else if (env("SLURM_NTASKS") && env("SLURM_PROCID")) {
    e.world = std::max(1, env_int("SLURM_NTASKS", 1));
    e.rank = env_int("SLURM_PROCID", 0);
    e.local_rank = env_int("SLURM_LOCALID", 0);
    // This node's tasks: the step's per-node counts ("2(x3),1") at this node's index; srun sets those for every
    // step, SLURM_NTASKS_PER_NODE only with --ntasks-per-node.
    if (const char* t = env("SLURM_STEP_TASKS_PER_NODE") ? env("SLURM_STEP_TASKS_PER_NODE") : env("SLURM_TASKS_PER_NODE"))
      e.local_world = tasks_on_node(t, env_int("SLURM_NODEID", 0));
    else if (const char* n = env("SLURM_NTASKS_PER_NODE")) e.local_world = std::max(1, std::atoi(n));
    else e.local_world = e.world;
    e.launcher = "slurm";
  }
  if (e.rank >= e.world) throw UsageError(fmt::format("RANK={} is not below WORLD_SIZE={}", e.rank, e.world));
  if (e.local_rank >= e.local_world)
    throw UsageError(fmt::format("LOCAL_RANK={} is not below LOCAL_WORLD_SIZE={}", e.local_rank, e.local_world));
  // The rendezvous: MASTER_ADDR when the launcher or the user set it; in a Slurm step, the step's first node (rank 0
  // runs there); else where the tuner runs (AUTOTUNE_MASTER_ADDR, a launch template's fallback).
  const char* nodes = env("SLURM_STEP_NODELIST") ? env("SLURM_STEP_NODELIST") : env("SLURM_JOB_NODELIST");
  if (const char* a = env("MASTER_ADDR")) e.master_addr = a;
  else if (e.launcher == "slurm" && nodes) e.master_addr = expand_hostlist(nodes).front();
  else if (const char* t = env("AUTOTUNE_MASTER_ADDR")) e.master_addr = t;
  e.master_port = env_int("MASTER_PORT", 0);
  e.listen_fd = env("AUTOTUNE_STORE_FD") ? env_int("AUTOTUNE_STORE_FD", -1) : -1;
  if (const char* a = env("TORCHELASTIC_USE_AGENT_STORE")) e.agent_store = std::string(a) == "True" || std::string(a) == "1";
  e.single_rank_group = e.world == 1 && env("WORLD_SIZE") && e.master_port > 0;
  if (e.world > 1 && e.master_port == 0)
    throw UsageError(
        fmt::format("WORLD_SIZE={} but MASTER_PORT is not set: the ranks need a rendezvous address "
                    "(MASTER_ADDR, MASTER_PORT)",
                    e.world));
  return e;
}

std::uint64_t CommRecorder::launched(const std::string& op, std::int64_t bytes) {
  std::lock_guard<std::mutex> l(mu_);
  if (!on_) return kNotRecorded;
  v_.push_back({now(), 0, bytes, op});
  return first_id_ + v_.size() - 1;
}

void CommRecorder::complete(std::uint64_t id) {
  const double t = now();
  {
    std::lock_guard<std::mutex> l(mu_);
    if (id < first_id_ || id - first_id_ >= v_.size()) return;  // taken already (or never recorded)
    v_[id - first_id_].end = t;
  }
  cv_.notify_all();
}

std::vector<CommInterval> CommRecorder::take(std::chrono::milliseconds settle) {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait_for(l, settle, [&] { return std::all_of(v_.begin(), v_.end(), [](const CommInterval& c) { return c.end > 0; }); });
  std::vector<CommInterval> out;
  out.swap(v_);
  first_id_ += out.size();
  return out;
}

void CommRecorder::enable(bool on) {
  std::lock_guard<std::mutex> l(mu_);
  on_ = on;
  first_id_ += v_.size();
  v_.clear();
}

Group join(const DistEnv& e, const torch::Device& device, std::chrono::milliseconds timeout) {
  Group g;
  c10d::TCPStoreOptions so;
  so.port = static_cast<std::uint16_t>(e.master_port);
  so.isServer = e.rank == 0 && !e.agent_store;
  so.numWorkers = static_cast<std::size_t>(e.world);
  so.waitWorkers = true;
  so.timeout = timeout;
  if (so.isServer && e.listen_fd >= 0) so.masterListenFd = e.listen_fd;
  g.store = c10::make_intrusive<c10d::TCPStore>(e.master_addr, so);
  g.store_kind = so.isServer ? fmt::format("TCPStore server on port {} (rank 0)", e.master_port)
                             : fmt::format("TCPStore client of {}:{}", e.master_addr, e.master_port);
  g.recorder = std::make_shared<CommRecorder>();
  g.pg = c10::make_intrusive<c10d::ProcessGroup>(g.store, e.rank, e.world);
  c10::intrusive_ptr<c10d::Backend> backend;
  if (device.is_cuda()) {
    backend = make_nccl_backend(g.store, e.rank, e.world, timeout);
    g.backend = "nccl";
    g.backend_version = nccl_version();
    backend = c10::make_intrusive<RecordingBackend>(backend, g.recorder);
    g.pg->setBackend(c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::NCCL, backend);
    g.pg->setDefaultBackend(c10d::ProcessGroup::BackendType::NCCL);
  } else {
    // All ranks on one host talk over loopback; across hosts each binds the interface GLOO_SOCKET_IFNAME names, else
    // the address its route to the rendezvous leaves from (a host name may resolve to loopback or another network).
    const bool local = e.local_world == e.world;
    const char* ifname = env("GLOO_SOCKET_IFNAME");
    const std::string addr = ifname ? interface_address(ifname) : local ? "127.0.0.1" : route_source_address(e.master_addr);
    g.interface = ifname ? fmt::format("{} ({}, GLOO_SOCKET_IFNAME)", addr, ifname)
                  : local ? addr + " (all ranks on this host)"
                          : fmt::format("{} (the route to {})", addr, e.master_addr);
    backend = make_gloo_backend(g.store, e.rank, e.world, addr, timeout);
    g.backend = "gloo";
    g.backend_version = "gloo built into libtorch_cpu";
    backend = c10::make_intrusive<RecordingBackend>(backend, g.recorder);
    g.pg->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO, backend);
    g.pg->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
  }
  return g;
}

bool host_times_collectives(const std::string& backend) { return backend != "nccl"; }

int threads_per_rank(int host_cores, int local_world) { return std::max(1, host_cores / std::max(1, local_world)); }

}  // namespace autotune::dist
