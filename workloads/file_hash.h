#pragma once
// SHA-256 of a file (FIPS 180-4), hex: what the reports name a user's model by, so a result is tied to
// the exact bytes that were trained (`sha256sum MODEL.pt` prints the same).
#include <string>

namespace autotune {

/// Lower-case hex digest; throws std::runtime_error naming the file when it cannot be read.
std::string sha256_file(const std::string& path);
/// The digest of `bytes` (for tests and small inputs).
std::string sha256_hex(const std::string& bytes);

}  // namespace autotune
