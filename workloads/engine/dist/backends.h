#pragma once
// The two c10d backends, each made in its own translation unit (see gloo_backend.cpp for why Gloo's
// must be alone). Nothing here exposes a Gloo or NCCL type: callers see c10d::Backend only.
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <string>

namespace autotune::dist {

/// c10d::ProcessGroupGloo over `store`, one TCP device on `interface_host` (an address or host name of
/// this machine that the other ranks can reach: "127.0.0.1" when all ranks are local; "" lets gloo pick
/// the address of this host's name, as torch.distributed does by default).
c10::intrusive_ptr<c10d::Backend> make_gloo_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world,
                                                    const std::string& interface_host, std::chrono::milliseconds timeout);

/// c10d::ProcessGroupNCCL over `store`; throws std::runtime_error when this build has no NCCL.
c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world,
                                                    std::chrono::milliseconds timeout);
/// "2.28.9", or "" when this build has no NCCL.
std::string nccl_version();

}  // namespace autotune::dist
