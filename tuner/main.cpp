// autotune: the CLI and tuner. Does not link LibTorch; trials run in autotune-worker processes.
#include <iostream>

#include "tuner/cli.h"
#include "tuner/exec/interrupt.h"

int main(int argc, char** argv) {
  autotune::install_interrupt_handlers();  // Ctrl-C / SIGTERM: stop cleanly (tuner/exec/interrupt.h)
  return autotune::run_cli(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
