#pragma once
// A test's wait for a running tuner's journal to hold some trials: the kill-9 tests (tests/tuner/tune_fake_test.cpp,
// tests/tuner/parallel_test.cpp) kill the tuner once it has committed a few.
#include <chrono>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <string>
#include <thread>

#include "tuner/measures/journal.h"

namespace autotune::testing {

/// Reads `out`/journal.sqlite every 50 ms until it holds at least `n` trials or `seconds` have passed; returns the count
/// it read last (0 while the file is not there). The poll may open the journal while the tuner is still making it:
/// since 2026-12-01 a new journal is made once, whoever opens it first (Journal.ProcessesOpeningANewJournalAtOnceAllGetIt).
/// Before, the two could both make the schema and one failed; when that was the tuner, a 20-s poll saw nothing committed
/// (tune_fake_test 2026-12-01, parallel_test 2026-11-30).
inline std::size_t wait_for_trials(const std::string& out, std::size_t n, double seconds) {
  const std::string path = out + "/journal.sqlite";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  std::size_t committed = 0;
  while (committed < n && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!std::filesystem::exists(path)) continue;
    try {
      committed = Journal(path).trials().size();
    } catch (const std::exception&) {  // a read that failed (the file busy past the timeout): read again next time
    }
  }
  return committed;
}

}  // namespace autotune::testing
