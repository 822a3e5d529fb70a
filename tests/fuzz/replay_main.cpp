// Runs a fuzz target over files, without libFuzzer: `fuzz_replay_X DIR_OR_FILE...` feeds every file to
// LLVMFuzzerTestOneInput. CTest replays the committed corpora (seeds and every input that once
// crashed) this way on every build, so a fixed bug stays fixed (tests/fuzz/README.md).
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::size_t n = 0;
  auto run = [&](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    ++n;
  };
  for (int i = 1; i < argc; ++i) {
    if (fs::is_directory(argv[i])) {
      for (const auto& e : fs::recursive_directory_iterator(argv[i]))
        if (e.is_regular_file()) run(e.path());
    } else if (fs::exists(argv[i])) {
      run(argv[i]);
    }
  }
  std::printf("replayed %zu inputs\n", n);
  return n > 0 ? 0 : 1;
}
