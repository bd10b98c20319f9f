#include "launch/watchdog.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "testing/fake_clock.h"

namespace bigmac::launch {
namespace {

using std::chrono::seconds;

class WatchdogTest : public ::testing::Test {
 protected:
  WatchdogTest() { limits_ = {seconds(30), seconds(10), true}; }

  ProgressEvent at(int rank, ProgressKind kind, std::optional<std::int64_t> step = {},
                 std::optional<double> loss = {}) {
    ProgressEvent o;
    o.rank = rank;
    o.time = clock_.now();
    o.kind = kind;
    o.global_step = step;
    o.loss = loss;
    return o;
  }

  testing::FakeClock clock_;
  WatchdogLimits limits_;
};

TEST_F(WatchdogTest, SilenceBeforeRendezvousUsesTheInitTimeout) {
  Watchdog dog({0, 1}, limits_, clock_.now());
  clock_.advance(seconds(29));
  EXPECT_FALSE(dog.check(clock_.now()).stop);
  clock_.advance(seconds(1));
  WatchdogVerdict v = dog.check(clock_.now());
  ASSERT_TRUE(v.stop);
  ASSERT_EQ(v.stalls.size(), 2u);
  EXPECT_TRUE(v.stalls[0].before_rendezvous);
  EXPECT_EQ(v.stalls[0].silent_for, seconds(30));
  EXPECT_EQ(v.stalls[0].limit, seconds(30));
  EXPECT_EQ(v.stalls[0].describe(),
            "rank 0 stalled before rendezvous: no progress for 30.0 s (limit 30.0 s)");
}

TEST_F(WatchdogTest, AfterRendezvousTheStallTimeoutApplies) {
  Watchdog dog({0, 1}, limits_, clock_.now());
  clock_.advance(seconds(5));
  dog.observe(at(0, ProgressKind::kPgReady));
  dog.observe(at(1, ProgressKind::kPgReady));
  dog.observe(at(0, ProgressKind::kStep, 3, 1.5));
  dog.observe(at(1, ProgressKind::kHeartbeat, 3));
  EXPECT_EQ(dog.next_deadline(), clock_.now() + seconds(10));
  clock_.advance(seconds(4));
  dog.observe(at(1, ProgressKind::kOutput));  // rank 1 still prints; rank 0 is silent
  clock_.advance(seconds(6));
  WatchdogVerdict v = dog.check(clock_.now());
  ASSERT_EQ(v.stalls.size(), 1u);
  EXPECT_EQ(v.stalls[0].rank, 0);
  EXPECT_FALSE(v.stalls[0].before_rendezvous);
  EXPECT_EQ(v.stalls[0].last_step, 3);
  EXPECT_EQ(v.stalls[0].describe(),
            "rank 0 stalled after step 3: no progress for 10.0 s (limit 10.0 s)");
}

TEST_F(WatchdogTest, LongestSilenceIsListedFirstAndStageIsNamed) {
  Watchdog dog({0, 1}, limits_, clock_.now());
  ProgressEvent layout = at(1, ProgressKind::kLayout);
  layout.stage = 1;
  dog.observe(layout);
  dog.observe(at(0, ProgressKind::kStep, 0, 2.0));
  dog.observe(at(1, ProgressKind::kHeartbeat, 0));
  clock_.advance(seconds(2));
  dog.observe(at(0, ProgressKind::kStep, 1, 1.0));
  clock_.advance(seconds(9));
  WatchdogVerdict v = dog.check(clock_.now());
  ASSERT_EQ(v.stalls.size(), 1u);
  EXPECT_EQ(v.stalls[0].rank, 1);
  EXPECT_EQ(v.stalls[0].stage, 1);
  EXPECT_NE(v.stalls[0].describe().find("after step 0 (stage 1)"), std::string::npos);
  clock_.advance(seconds(2));
  v = dog.check(clock_.now());
  ASSERT_EQ(v.stalls.size(), 2u);
  EXPECT_EQ(v.stalls[0].rank, 1);
  EXPECT_EQ(v.stalls[1].rank, 0);
}

TEST_F(WatchdogTest, WorldOfOneWithoutPgReadyIsPastRendezvousAtItsFirstStep) {
  Watchdog dog({0}, limits_, clock_.now());
  dog.observe(at(0, ProgressKind::kStep, 0, 3.0));
  clock_.advance(seconds(10));
  WatchdogVerdict v = dog.check(clock_.now());
  ASSERT_EQ(v.stalls.size(), 1u);
  EXPECT_FALSE(v.stalls[0].before_rendezvous);
}

TEST_F(WatchdogTest, ExitedRanksDoNotStall) {
  Watchdog dog({0, 1}, limits_, clock_.now());
  dog.rank_exited(0);
  dog.rank_exited(1);
  clock_.advance(seconds(1000));
  EXPECT_FALSE(dog.check(clock_.now()).stop);
  EXPECT_EQ(dog.next_deadline(), Clock::time_point::max());
}

TEST_F(WatchdogTest, NonFiniteLossStopsAtItsStep) {
  Watchdog dog({0}, limits_, clock_.now());
  dog.observe(at(0, ProgressKind::kStep, 0, 2.0));
  dog.observe(at(0, ProgressKind::kStep, 1, std::numeric_limits<double>::infinity()));
  dog.observe(at(0, ProgressKind::kStep, 2, std::nan("")));
  WatchdogVerdict v = dog.check(clock_.now());
  EXPECT_TRUE(v.stop);
  ASSERT_TRUE(v.non_finite.has_value());
  EXPECT_EQ(v.non_finite->global_step, 1);  // the first one, not the latest
  EXPECT_EQ(v.non_finite->describe(), "rank 0 logged loss inf at step 1");
}

TEST_F(WatchdogTest, NonFiniteLossCanBeRecordedWithoutStopping) {
  limits_.stop_on_non_finite = false;
  Watchdog dog({0}, limits_, clock_.now());
  dog.observe(at(0, ProgressKind::kStep, 4, std::nan("")));
  WatchdogVerdict v = dog.check(clock_.now());
  EXPECT_FALSE(v.stop);
  ASSERT_TRUE(v.non_finite.has_value());
  EXPECT_EQ(v.non_finite->global_step, 4);
}

TEST_F(WatchdogTest, UnknownRanksAreIgnored) {
  Watchdog dog({0}, limits_, clock_.now());
  clock_.advance(seconds(29));
  dog.observe(at(7, ProgressKind::kPgReady));
  clock_.advance(seconds(1));
  EXPECT_TRUE(dog.check(clock_.now()).stop);
}

}  // namespace
}  // namespace bigmac::launch
