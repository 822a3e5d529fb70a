#pragma once
#include <stdexcept>
#include <string>

namespace autotune {

/// Bad user input (flag, knob, value, config file). `what()` is one line naming the field, the bad
/// value and what is allowed; the CLI prints it and exits with status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace autotune
