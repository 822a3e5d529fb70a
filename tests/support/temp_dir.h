#pragma once
#include <ftw.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

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
    remove_tree(path_.string());
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { remove_tree(path_.string()); }
  /// rm -rf with nftw, not std::filesystem::remove_all: libtorch.so exports its own copy of
  /// std::filesystem, the dynamic linker binds LibTorch-linked tests to it, and its remove_all
  /// crashes (calls a null pointer) — seen with torch 2.11.0.
  static void remove_tree(const std::string& p) {
    ::nftw(
        p.c_str(), [](const char* f, const struct stat*, int, struct FTW*) { return std::remove(f); }, 16, FTW_DEPTH | FTW_PHYS);
  }
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
