// The worker's host allocator policy (retain_freed_host_memory): freed blocks are reused, not handed
// back to the kernel and faulted in again. Measured with the process's own minor-fault counter on the
// allocation pattern of a training step (many multi-MiB blocks allocated, touched, all freed, repeat).
#include "workloads/engine/host_heap.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <vector>

#include "knobs/host_heap.h"
#include "profiler/host_memory.h"
#include "reports/apply.h"

namespace autotune {
namespace {

constexpr size_t kBlock = 4u << 20;  // 4 MiB: above glibc's initial 128 KiB mmap threshold
constexpr int kBlocks = 10, kCycles = 6;

/// Minor faults over cycles 2..kCycles of "allocate kBlocks blocks, write them, free them all".
std::int64_t faults_in_steady_cycles() {
  std::int64_t before = 0;
  for (int c = 0; c < kCycles; ++c) {
    if (c == 1) before = minor_page_faults();
    std::vector<void*> blocks;
    for (int i = 0; i < kBlocks; ++i) {
      void* p = std::malloc(kBlock);
      std::memset(p, c + 1, kBlock);  // touch every page, as a kernel writing a tensor does
      blocks.push_back(p);
    }
    for (void* p : blocks) std::free(p);
  }
  return minor_page_faults() - before;
}

TEST(HostMemory, RetainedHeapStopsPerStepPageFaults) {
  const std::int64_t pages_per_cycle = kBlocks * static_cast<std::int64_t>(kBlock) / sysconf(_SC_PAGESIZE);
  // glibc's defaults, measured in a child process that never applies the policy.
  int fd[2];
  ASSERT_EQ(pipe(fd), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::int64_t f = faults_in_steady_cycles();
    (void)!write(fd[1], &f, sizeof f);
    _exit(0);
  }
  std::int64_t default_faults = -1;
  ASSERT_EQ(read(fd[0], &default_faults, sizeof default_faults), static_cast<ssize_t>(sizeof default_faults));
  int status = 0;
  waitpid(pid, &status, 0);
  close(fd[0]);
  close(fd[1]);

  const std::string applied = retain_freed_host_memory();
  EXPECT_EQ(applied, host_heap::kApplied);
  EXPECT_EQ(retain_freed_host_memory(), applied);  // idempotent
  const std::int64_t retained_faults = faults_in_steady_cycles();

  // Defaults: the freed heap top is trimmed every cycle, so each cycle faults its pages in again.
  EXPECT_GT(default_faults, (kCycles - 1) * pages_per_cycle / 2)
      << "glibc defaults did not re-fault: this test proves nothing here";
  // Retained: after the first cycle the same memory is reused; only a handful of faults remain.
  EXPECT_LT(retained_faults, pages_per_cycle / 10) << "defaults " << default_faults << " faults";
}

/// Runs in a re-executed copy of this test binary only (see the next test): the allocation pattern
/// under whatever MALLOC_* environment it was started with, no mallopt call; writes its faults.
TEST(HostMemory, ChildUnderTheReportsEnvironment) {
  const char* out = std::getenv("AUTOTUNE_HEAP_ENV_CHILD");
  if (!out) GTEST_SKIP() << "runs only as the child of TheReportsPythonLineGivesTheSamePolicy";
  const std::int64_t f = faults_in_steady_cycles();
  std::ofstream(out) << f;
}

TEST(HostMemory, TheReportsPythonLineGivesTheSamePolicy) {
  // The report tells Python users to start their program with MALLOC_*_ variables; glibc reads them at
  // start-up. Take them from the report's own line, start this binary again with only them set, and
  // measure the same pattern: it must fault like the mallopt policy, not like glibc's defaults.
  const ApplySnippets heap = heap_snippets(host_heap::kApplied);
  ASSERT_EQ(heap.python.size(), 1u);
  std::vector<std::string> env;
  const std::regex var("(MALLOC_[A-Z_]+_)=([0-9]+)");
  for (auto it = std::sregex_iterator(heap.python[0].begin(), heap.python[0].end(), var); it != std::sregex_iterator(); ++it)
    env.push_back(it->str());
  ASSERT_EQ(env.size(), 2u) << heap.python[0];
  char tmpl[] = "/tmp/autotune-heap-env-XXXXXX";
  const int tfd = mkstemp(tmpl);
  ASSERT_GE(tfd, 0);
  close(tfd);
  env.push_back(std::string("AUTOTUNE_HEAP_ENV_CHILD=") + tmpl);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string filter = "--gtest_filter=HostMemory.ChildUnderTheReportsEnvironment";
  char* argv[] = {const_cast<char*>("host_memory_test"), filter.data(), nullptr};
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, STDOUT_FILENO);
    execve("/proc/self/exe", argv, envp.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  std::int64_t faults = -1;
  std::ifstream(tmpl) >> faults;
  std::remove(tmpl);
  const std::int64_t pages_per_cycle = kBlocks * static_cast<std::int64_t>(kBlock) / sysconf(_SC_PAGESIZE);
  ASSERT_GE(faults, 0) << "the child did not report";
  EXPECT_LT(faults, pages_per_cycle / 10) << heap.python[0];
}

}  // namespace
}  // namespace autotune
