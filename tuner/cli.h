#pragma once
#include <iosfwd>
#include <string>
#include <vector>

namespace autotune {

/// The `autotune` command line. `args` excludes argv[0]. Returns the process exit status:
/// 0 success, 1 the command ran but found no stable config / failed at run time, 2 usage error.
/// Never calls exit(); prints to `out` / `err`.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace autotune
