#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace autotune::testing {

/// A fresh folder per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("autotune-test-" + std::to_string(::getpid()) + "-" + info->test_suite_name() + "-" + info->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& f) const { return (path_ / f).string(); }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

/// Folder of the source tree / build tree, from CTest's environment (see autotune_add_test).
inline std::string source_dir() {
  const char* s = std::getenv("AUTOTUNE_SOURCE_DIR");
  return s ? s : ".";
}
inline std::string binary_dir() {
  const char* s = std::getenv("AUTOTUNE_BINARY_DIR");
  return s ? s : ".";
}

}  // namespace autotune::testing
