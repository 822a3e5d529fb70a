// `autotune --version`: this autotune, and what each worker it would start runs with — the Python worker's Python,
// torch and CUDA (asked of the worker itself: `info`), and whether the C++ worker is installed.
#include <fmt/format.h>

#include <ostream>

#include "knobs/worker_info.h"
#include "tuner/commands/command.h"
#include "tuner/exec/trial_runner.h"
#include "tuner/exec/worker_client.h"

#ifndef AUTOTUNE_VERSION
#error "AUTOTUNE_VERSION is set by tuner/CMakeLists.txt from the project() version"
#endif

namespace autotune::cli {

namespace {

/// "torch 2.11.0, CUDA 13.0 build, no CUDA device" / "…, 1 CUDA device (NVIDIA H200), driver 13.0".
std::string torch_words(const char* torch, const EnvFingerprint& e) {
  const std::string cuda = e.cuda_compiled.empty() ? "a CPU-only build" : fmt::format("CUDA {} build", e.cuda_compiled);
  const std::string devices =
      e.cuda_available ? fmt::format("{} CUDA device{} ({}){}", e.device_count, e.device_count == 1 ? "" : "s", e.device_name,
                                     e.driver.empty() ? "" : ", driver " + e.driver)
                       : "no CUDA device visible: trials run on the CPU";
  return fmt::format("{} {}, {}, {}", torch, e.torch_version, cuda, devices);
}

}  // namespace

int version(std::ostream& out) {
  const std::string self = self_path();
  out << fmt::format("autotune {} ({})\n", AUTOTUNE_VERSION, self.empty() ? "autotune" : self);
  bool usable = false;
  const std::string py = python_worker_path();
  try {
    const EnvFingerprint e = query_environment(py);
    out << fmt::format("Python worker: {}\n  Python {} at {}\n  {}\n", py, e.python_version, e.python, torch_words("torch", e));
    usable = true;
  } catch (const std::exception& ex) {
    out << fmt::format("Python worker: {}: not usable: {}\n", py, ex.what());
  }
  const std::string cpp = default_worker_path();
  if (!cpp_worker_installed()) {
    out << fmt::format("C++ worker: not installed ({}): built-in workloads run as their Python twins in the Python worker; "
                       "a TorchScript model or a C++ plugin needs it (docs/install.md)\n",
                       cpp);
  } else {
    try {
      out << fmt::format("C++ worker: {}\n  {}\n", cpp, torch_words("LibTorch", query_environment(cpp)));
      usable = true;
    } catch (const std::exception& ex) {
      out << fmt::format("C++ worker: {}: not usable: {}\n", cpp, ex.what());
    }
  }
  return usable ? 0 : 1;
}

}  // namespace autotune::cli
