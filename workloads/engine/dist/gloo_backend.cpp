// The only file of autotune that includes ProcessGroupGloo.hpp, and with it gloo's own headers.
//
// The torch wheel exports ProcessGroupGloo from libtorch_cpu (gloo is compiled in) but does not ship
// gloo's headers, which ProcessGroupGloo.hpp includes. They come from Debian's libgloo-dev, a 2022
// snapshot that is older than the gloo inside libtorch: the two differ in class layouts. This file is
// safe because it touches gloo types only through opaque shared_ptr<gloo::transport::Device> handles
// made and consumed by libtorch's own out-of-line functions (createDeviceForHostname, the
// ProcessGroupGloo constructor); no gloo object is built, copied or laid out by code compiled here.
// No other file may include a gloo header (tests/arrows/check_arrows.py refuses one anywhere else), and
// tests/workloads/ddp_test.cpp's two-rank runs exercise the boundary: allreduce, broadcast and allgather
// through the backend made here, gradients checked against one process.
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "workloads/engine/dist/backends.h"

namespace autotune::dist {

c10::intrusive_ptr<c10d::Backend> make_gloo_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world,
                                                    const std::string& interface_host, std::chrono::milliseconds timeout) {
  auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
  opts->devices.push_back(interface_host.empty() ? c10d::ProcessGroupGloo::createDefaultDevice()
                                                 : c10d::ProcessGroupGloo::createDeviceForHostname(interface_host));
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world, opts);
}

}  // namespace autotune::dist
