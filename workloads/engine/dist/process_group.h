#pragma once
// Joining a multi-process trial: who this rank is (from the launcher's environment), the rendezvous
// store, and the c10d process group with the device's backend (NCCL on CUDA, Gloo on CPU) wrapped so
// every collective's start and end are recorded (CommRecorder) for the report's communication figures.
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/torch.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace autotune::dist {

/// This process's place in the job, read from the environment its launcher set: autotune's local
/// launcher and torchrun set RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT;
/// Slurm's srun sets SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID and SLURM_STEP_TASKS_PER_NODE; the
/// rendezvous is MASTER_ADDR when set, else the step's first node (workloads/engine/dist/rendezvous.h).
struct DistEnv {
  int rank = 0, world = 1, local_rank = 0, local_world = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  /// AUTOTUNE_STORE_FD: a listening socket the local launcher bound for rank 0's store (no port race).
  int listen_fd = -1;
  /// TORCHELASTIC_USE_AGENT_STORE=True: torchrun's agent already serves the store; rank 0 is a client.
  bool agent_store = false;
  std::string launcher = "none";  ///< autotune | torchrun | slurm | env | none
  /// WORLD_SIZE=1 with a MASTER_PORT (torchrun --nproc_per_node=1): one rank that still joins a process
  /// group and synchronises through the Reducer, as Python's DDP does with one process.
  bool single_rank_group = false;
  bool distributed() const { return world > 1 || single_rank_group; }

  /// Throws UsageError naming the variable when the environment is inconsistent (RANK ≥ WORLD_SIZE,
  /// WORLD_SIZE > 1 without MASTER_PORT, a non-number). Empty variables count as unset.
  static DistEnv from_environment();
};

/// Start and end (steady seconds) of each collective the backend ran, with its payload.
struct CommInterval {
  double start = 0, end = 0;
  std::int64_t bytes = 0;
  std::string op;
};

/// Thread-safe: collectives complete on the backend's own threads.
class CommRecorder {
 public:
  static constexpr std::uint64_t kNotRecorded = UINT64_MAX;
  /// Returns the interval's id (kNotRecorded while off); `complete` fills its end.
  std::uint64_t launched(const std::string& op, std::int64_t bytes);
  void complete(std::uint64_t id);
  /// The intervals recorded since the last take(), in launch order. Waits up to `settle` for ends still
  /// missing: a Work's future wakes its waiters before it runs its callbacks, so the Reducer can return
  /// from backward before the last completion is recorded. Ends still missing then are 0; a completion
  /// arriving after its interval was taken is dropped, never written into a later interval.
  std::vector<CommInterval> take(std::chrono::milliseconds settle = std::chrono::milliseconds(0));
  /// When off, nothing is recorded (set-up collectives are not part of a step).
  void enable(bool on);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<CommInterval> v_;
  std::uint64_t first_id_ = 0;  ///< the id of v_[0]
  bool on_ = false;
};

struct Group {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
  std::string backend;          ///< gloo | nccl
  std::string backend_version;  ///< NCCL's version; "built into libtorch_cpu" for Gloo
  std::shared_ptr<CommRecorder> recorder;
  std::string store_kind;  ///< "TCPStore server on :PORT (rank 0)", "TCPStore client of HOST:PORT"
  std::string interface;   ///< Gloo: the address this rank talks on and why ("198.18.7.3 (the route to atnode1)")
};

/// Rendezvous through c10d's TCPStore at MASTER_ADDR:MASTER_PORT and make the process group for
/// `device`'s type. Collective and rendezvous timeouts are `timeout`.
Group join(const DistEnv& env, const torch::Device& device, std::chrono::milliseconds timeout);

/// Whether the host's record of a collective (launch → its Work's future completed; CommRecorder) is the
/// time it ran. Gloo runs collectives on host threads and completes the future when they end. NCCL
/// enqueues a kernel on the GPU and completes the future at once (with CUDA events for later waiters),
/// so for "nccl" the host interval is only the enqueue; the profile's NCCL kernels are the measurement.
bool host_times_collectives(const std::string& backend);

/// The whole CPU budget split between the ranks on this host: cores / local ranks, at least 1.
int threads_per_rank(int host_cores, int local_world);

}  // namespace autotune::dist
