#pragma once
// A numeric flag's range as the CLI checks it. CLI::Range prints its bounds with std::to_string, so a bound of
// 1e-12 reads "0.000000" and the message "--lr 0 is not allowed; allowed: 0..10" contradicts itself; this one
// writes them as %g, in CLI::Range's own words (tuner/cli.cpp tidies those into ours).
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <string>

namespace autotune::cli {

inline CLI::Validator within(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        double v = 0;
        try {
          v = std::stod(text);
        } catch (const std::exception&) {
          return "";  // not a number: the conversion that follows names it
        }
        if (v >= lo && v <= hi) return "";
        return fmt::format("Value {} not in range {:g} to {:g}", text, lo, hi);
      },
      fmt::format("in [{:g}, {:g}]", lo, hi));
}

}  // namespace autotune::cli
