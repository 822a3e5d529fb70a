// autotune: the CLI and tuner. Does not link LibTorch; trials run in autotune-worker processes.
#include <cstring>
#include <iostream>

#include "tuner/cli.h"
#include "tuner/exec/interrupt.h"
#include "tuner/exec/warm_client.h"

int main(int argc, char** argv) {
  // The warm C++ worker's client (tuner/exec/warm_client.h): what the tuner starts for a command the warm worker forks.
  if (argc >= 3 && std::strcmp(argv[1], "--warm-client") == 0) return autotune::warm_client_main(argc - 2, argv + 2);
  autotune::install_interrupt_handlers();  // Ctrl-C / SIGTERM: stop cleanly (tuner/exec/interrupt.h)
  return autotune::run_cli(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
