// A stand-in for the CUDA driver library (libcuda.so.1) with the two answers the warm C++ worker's guard reads
// (workloads/warm_server.cpp, cuda_driver_initialised): cuDeviceGetCount says CUDA_ERROR_NOT_INITIALIZED (3) until
// cuInit has run. warm_cpp_worker_test preloads it into a server: mapped but not initialised is how LibTorch leaves a
// process on a host with a driver. FAKE_CUDA_INIT_AT_LOAD=1 initialises it as the library loads: a server in which
// CUDA was initialised. It answers nothing else: any other driver call fails to resolve, as on a host without one.
#include <cstdlib>
#include <cstring>

namespace {
bool g_initialised = false;

__attribute__((constructor)) void at_load() {
  const char* v = std::getenv("FAKE_CUDA_INIT_AT_LOAD");
  g_initialised = v && std::strcmp(v, "1") == 0;
}
}  // namespace

extern "C" {
__attribute__((visibility("default"))) int cuInit(unsigned int) {
  g_initialised = true;
  return 0;
}

__attribute__((visibility("default"))) int cuDeviceGetCount(int* count) {
  if (!g_initialised) return 3;  // CUDA_ERROR_NOT_INITIALIZED
  *count = 0;
  return 0;
}
}
