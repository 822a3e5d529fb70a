// The process group's record of each collective (workloads/engine/dist/process_group.h): ends filled by
// id, a take() that waits for completions still running, and a completion arriving after its interval
// was taken dropped — never written into a later step's interval (the defect this guards).
#include "workloads/engine/dist/process_group.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace autotune::dist {
namespace {

TEST(CommRecorder, RecordsOnlyWhileOnAndFillsEndsById) {
  CommRecorder r;
  EXPECT_EQ(r.launched("allreduce", 8), CommRecorder::kNotRecorded);  // off: set-up collectives
  r.enable(true);
  const auto a = r.launched("allreduce", 100), b = r.launched("broadcast", 4);
  r.complete(b);
  r.complete(a);
  const auto v = r.take();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].op, "allreduce");
  EXPECT_EQ(v[0].bytes, 100);
  EXPECT_EQ(v[1].op, "broadcast");
  EXPECT_GT(v[0].end, 0);
  EXPECT_GE(v[0].end, v[0].start);
  EXPECT_GT(v[1].end, 0);
  EXPECT_TRUE(r.take().empty());
}

TEST(CommRecorder, TakeWaitsForACompletionStillRunning) {
  CommRecorder r;
  r.enable(true);
  const auto id = r.launched("allreduce", 8);
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    r.complete(id);
  });
  const auto v = r.take(std::chrono::seconds(30));  // returns when the end arrives, not after 30 s
  late.join();
  ASSERT_EQ(v.size(), 1u);
  EXPECT_GT(v[0].end, 0);
}

TEST(CommRecorder, ACompletionAfterItsIntervalWasTakenTouchesNoLaterInterval) {
  CommRecorder r;
  r.enable(true);
  const auto old = r.launched("allreduce", 8);
  const auto first = r.take();  // the step ends before the callback ran
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].end, 0);
  const auto next = r.launched("allreduce", 16);  // the next step's first collective: the same position
  r.complete(old);                                // the stale callback
  const auto second = r.take();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].bytes, 16);
  EXPECT_EQ(second[0].end, 0) << "the previous step's completion was written into this step's interval";
  r.complete(next);  // taken already: dropped too
  EXPECT_TRUE(r.take().empty());
}

TEST(CommRecorder, OnlyAHostBackendsRecordIsTheCollectivesRun) {
  // Gloo runs a collective on host threads and completes its Work when it ends; NCCL completes it at the
  // enqueue, so the trainer reports NCCL communication as not timed (RankStats::comm_timed).
  EXPECT_TRUE(host_times_collectives("gloo"));
  EXPECT_FALSE(host_times_collectives("nccl"));
}

}  // namespace
}  // namespace autotune::dist
