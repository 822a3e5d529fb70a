// ProcessGroupNCCL (libtorch_cuda) when the build has it: torch's CMake config defines USE_C10D_NCCL.
#include <stdexcept>

#include "workloads/engine/dist/backends.h"
#if defined(USE_C10D_NCCL) && !defined(AUTOTUNE_NO_NCCL_HEADER)
#define AUTOTUNE_HAVE_NCCL 1
#include <torch/csrc/distributed/c10d/NCCLUtils.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace autotune::dist {

#ifdef AUTOTUNE_HAVE_NCCL
c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int world,
                                                    std::chrono::milliseconds timeout) {
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world, opts);
}
std::string nccl_version() { return c10d::getNcclVersion(); }
#else
c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>&, int, int, std::chrono::milliseconds) {
  throw std::runtime_error(
      "this autotune-worker was built without NCCL (LibTorch without USE_C10D_NCCL, or no nccl.h at build time)");
}
std::string nccl_version() { return ""; }
#endif

}  // namespace autotune::dist
