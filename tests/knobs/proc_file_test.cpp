// knobs/proc_file.h: another process's /proc files read while it exits. The case that threw before the helper existed
// (a read after the process was reaped, on a file opened while it ran) is made here on purpose, not left to a race.
#include "knobs/proc_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

namespace autotune {
namespace {

/// A child that sleeps until killed.
pid_t sleeper() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  return pid;
}

TEST(ProcFile, ReadsALiveProcessesFiles) {
  const auto stat = read_proc_file("/proc/self/stat");
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->rfind(std::to_string(::getpid()) + " (", 0), 0u) << *stat;
  const pid_t child = sleeper();
  ASSERT_GT(child, 0);
  const auto cmdline = read_proc_file("/proc/" + std::to_string(child) + "/cmdline");
  ASSERT_TRUE(cmdline.has_value());
  EXPECT_FALSE(cmdline->empty());  // the fork's copy of this test's own command line
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST(ProcFile, AReapedProcessHasNoFiles) {
  const pid_t child = sleeper();
  ASSERT_GT(child, 0);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(read_proc_file("/proc/" + std::to_string(child) + "/stat").has_value());
  EXPECT_FALSE(read_proc_file("/proc/" + std::to_string(child) + "/cmdline").has_value());
}

TEST(ProcFile, AZombiesCmdlineIsEmptyAndItsStatSaysZ) {
  const pid_t child = sleeper();
  ASSERT_GT(child, 0);
  ::kill(child, SIGKILL);
  siginfo_t info{};
  ASSERT_EQ(::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT), 0);  // exited, not reaped
  const auto cmdline = read_proc_file("/proc/" + std::to_string(child) + "/cmdline");
  ASSERT_TRUE(cmdline.has_value());
  EXPECT_EQ(*cmdline, "");
  const auto stat = read_proc_file("/proc/" + std::to_string(child) + "/stat");
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->substr(stat->rfind(')') + 2, 1), "Z") << *stat;
  ::waitpid(child, nullptr, 0);
}

TEST(ProcFile, AFileOpenedBeforeTheProcessWasReapedReadsAsNothing) {
  const pid_t child = sleeper();
  ASSERT_GT(child, 0);
  const int fd = ::open(("/proc/" + std::to_string(child) + "/cmdline").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(read_all(fd).has_value());  // ESRCH: the read that libstdc++'s filebuf throws from
  ::close(fd);
}

TEST(ProcFile, AMissingPathIsNothing) {
  EXPECT_FALSE(read_proc_file("/proc/0/stat").has_value());
  EXPECT_FALSE(read_proc_file("/nonexistent/file").has_value());
}

}  // namespace
}  // namespace autotune
