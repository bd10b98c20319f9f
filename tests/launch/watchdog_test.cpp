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

  ProgressEvent step(int rank, std::int64_t global_step, double step_ms) {
    ProgressEvent o = at(rank, ProgressKind::kStep, global_step, 1.0);
    o.step_ms = step_ms;
    return o;
  }
  ProgressEvent began(int rank, std::int64_t global_step) {
    ProgressEvent o = at(rank, ProgressKind::kHeartbeat, global_step);
    o.began = true;
    return o;
  }

  /// limits_ with the adaptive limit of the defaults (5 s, ×10) under a 60 s cap.
  WatchdogLimits adaptive() const { return {seconds(30), seconds(60), true, seconds(5), 10, 2}; }

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
            "rank 0 stalled before rendezvous: no progress for 30.0 s (limit 30.0 s: "
            "init_timeout_s, before the process group formed)");
}

TEST_F(WatchdogTest, AfterRendezvousTheStallTimeoutApplies) {
  Watchdog dog({0, 1}, limits_, clock_.now());
  clock_.advance(seconds(5));
  dog.observe(at(0, ProgressKind::kPgReady));
  dog.observe(at(1, ProgressKind::kPgReady));
  dog.observe(at(0, ProgressKind::kStep, 3, 1.5));
  dog.observe(at(1, ProgressKind::kHeartbeat, 3));
  EXPECT_EQ(dog.next_deadline(), clock_.now() + seconds(10));
  clock_.advance(seconds(6));
  dog.observe(at(1, ProgressKind::kOutput));  // rank 1 still prints; rank 0 is silent
  clock_.advance(seconds(4));
  WatchdogVerdict v = dog.check(clock_.now());
  ASSERT_EQ(v.stalls.size(), 1u);
  EXPECT_EQ(v.stalls[0].rank, 0);
  EXPECT_FALSE(v.stalls[0].before_rendezvous);
  EXPECT_EQ(v.stalls[0].last_step, 3);
  EXPECT_EQ(v.stalls[0].describe(),
            "rank 0 stalled after step 3: no progress for 10.0 s (limit 10.0 s: stall_timeout_s "
            "until 2 steps are timed (0 so far))");
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
  clock_.advance(std::chrono::milliseconds(4999));
  EXPECT_FALSE(dog.check(clock_.now()).stop);
  clock_.advance(std::chrono::milliseconds(4001));
  // Rank 1 is past its 10 s; rank 0, silent 9 s, went quiet too and is listed after it.
  WatchdogVerdict v = dog.check(clock_.now());
  ASSERT_EQ(v.stalls.size(), 2u);
  EXPECT_EQ(v.stalls[0].rank, 1);
  EXPECT_EQ(v.stalls[0].stage, 1);
  EXPECT_NE(v.stalls[0].describe().find("after step 0 (stage 1)"), std::string::npos);
  EXPECT_EQ(v.stalls[1].rank, 0);
  EXPECT_EQ(v.stalls[1].silent_for, seconds(9));
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

TEST_F(WatchdogTest, AfterTwoTimedStepsTheLimitFollowsTheMedianStepTime) {
  Watchdog dog({0}, adaptive(), clock_.now());
  dog.observe(at(0, ProgressKind::kPgReady));
  dog.observe(step(0, 0, 400));
  EXPECT_EQ(dog.limit_for(dog.ranks().at(0)).limit, seconds(60)) << "one timed step is not enough";
  dog.observe(step(0, 1, 800));
  const SilenceLimit limit = dog.limit_for(dog.ranks().at(0));
  EXPECT_EQ(limit.limit, seconds(5));
  EXPECT_EQ(limit.basis, "max(stall_min_s 5 s, 10 × median step 0.400 s)");
  dog.observe(step(0, 2, 900));
  dog.observe(step(0, 3, 1000));
  // Median of 0.4, 0.8, 0.9, 1.0 (the lower one of the middle two): 0.8 s × 10.
  EXPECT_EQ(dog.limit_for(dog.ranks().at(0)).limit, seconds(8));
  EXPECT_EQ(dog.next_deadline(), clock_.now() + seconds(8));
  clock_.advance(std::chrono::milliseconds(7999));
  EXPECT_FALSE(dog.check(clock_.now()).stop);
  clock_.advance(std::chrono::milliseconds(1));
  WatchdogVerdict v = dog.check(clock_.now());
  ASSERT_EQ(v.stalls.size(), 1u);
  EXPECT_EQ(v.stalls[0].describe(),
            "rank 0 stalled after step 3: no progress for 8.0 s (limit 8.0 s: max(stall_min_s 5 s, "
            "10 × median step 0.800 s))");
}

TEST_F(WatchdogTest, HeartbeatStepsAreTimedFromTheLinesOwnTimesWhenTheirPlacingDisagrees) {
  // A rank that logs heartbeats only: pg_ready read late (placed late), step 0 read at once
  // (placed where it was written). On the watchdog's clock step 0 ends before the rendezvous;
  // their own times say 0.1 s apart, and that is the step's time.
  Watchdog dog({0}, adaptive(), clock_.now());
  ProgressEvent ready = at(0, ProgressKind::kPgReady);
  ready.wall = 1000.0;
  ProgressEvent step0 = at(0, ProgressKind::kHeartbeat, 0);
  step0.time = ready.time - std::chrono::milliseconds(50);
  step0.wall = 1000.1;
  ProgressEvent step1 = at(0, ProgressKind::kHeartbeat, 1);
  step1.time = ready.time + std::chrono::milliseconds(60);
  step1.wall = 1000.2;
  dog.observe(ready);
  dog.observe(step0);
  dog.observe(step1);
  const SilenceLimit limit = dog.limit_for(dog.ranks().at(0));
  EXPECT_EQ(limit.limit, seconds(5)) << limit.basis;
  EXPECT_EQ(limit.basis, "max(stall_min_s 5 s, 10 × median step 0.100 s)");
}

TEST_F(WatchdogTest, AFirstStepTwentyTimesSlowerIsNoStall) {
  Watchdog dog({0}, adaptive(), clock_.now());
  dog.observe(at(0, ProgressKind::kPgReady));
  // Step 0 takes 20 s (compilation, warm-up): the cap applies until two steps are timed.
  clock_.advance(seconds(20));
  EXPECT_FALSE(dog.check(clock_.now()).stop);
  dog.observe(step(0, 0, 20000));
  clock_.advance(seconds(1));
  dog.observe(step(0, 1, 1000));
  // The lower median of {20 s, 1 s} is the normal step: limit 10 × 1 s.
  EXPECT_EQ(dog.limit_for(dog.ranks().at(0)).limit, seconds(10));
  clock_.advance(seconds(9));
  EXPECT_FALSE(dog.check(clock_.now()).stop);
  clock_.advance(seconds(1));
  EXPECT_TRUE(dog.check(clock_.now()).stop);
}

TEST_F(WatchdogTest, TheAdaptiveLimitNeverExceedsTheStallTimeoutNorUndercutsTheMinimum) {
  Watchdog slow({0}, adaptive(), clock_.now());
  slow.observe(step(0, 0, 30000));
  slow.observe(step(0, 1, 30000));
  const SilenceLimit capped = slow.limit_for(slow.ranks().at(0));
  EXPECT_EQ(capped.limit, seconds(60));
  EXPECT_EQ(capped.basis,
            "stall_timeout_s, the cap: max(stall_min_s 5 s, 10 × median step 30.000 s) is longer");

  Watchdog fast({0}, adaptive(), clock_.now());
  fast.observe(step(0, 0, 2));
  fast.observe(step(0, 1, 2));
  EXPECT_EQ(fast.limit_for(fast.ranks().at(0)).limit, seconds(5));

  WatchdogLimits fixed = adaptive();
  fixed.stall_factor = 0;
  Watchdog off({0}, fixed, clock_.now());
  off.observe(step(0, 0, 2));
  off.observe(step(0, 1, 2));
  EXPECT_EQ(off.limit_for(off.ranks().at(0)).limit, seconds(60));
}

TEST_F(WatchdogTest, ARankThatLogsNoStepTimesIsTimedFromStepToStep) {
  Watchdog dog({1}, adaptive(), clock_.now());
  dog.observe(at(1, ProgressKind::kPgReady));
  clock_.advance(seconds(3));  // step 0, warm-up included, timed from rendezvous
  dog.observe(at(1, ProgressKind::kHeartbeat, 0));
  dog.observe(began(1, 1));
  clock_.advance(std::chrono::milliseconds(700));
  dog.observe(at(1, ProgressKind::kHeartbeat, 1));
  EXPECT_EQ(dog.limit_for(dog.ranks().at(1)).limit, seconds(7));
}

TEST_F(WatchdogTest, AnEvaluationOrACheckpointAllowsTheStallTimeoutUntilTheNextStep) {
  Watchdog dog({0}, adaptive(), clock_.now());
  dog.observe(at(0, ProgressKind::kPgReady));
  dog.observe(step(0, 0, 100));
  dog.observe(step(0, 1, 100));
  ASSERT_EQ(dog.limit_for(dog.ranks().at(0)).limit, seconds(5));

  ProgressEvent eval = at(0, ProgressKind::kPause, 1);
  dog.observe(eval);
  EXPECT_EQ(dog.limit_for(dog.ranks().at(0)).basis,
            "stall_timeout_s, while it pauses (eval or checkpoint) at step 1");
  clock_.advance(seconds(50));
  EXPECT_FALSE(dog.check(clock_.now()).stop) << "a 50 s evaluation is no stall";
  dog.observe(at(0, ProgressKind::kPauseEnd, 1));
  clock_.advance(seconds(5));
  EXPECT_TRUE(dog.check(clock_.now()).stop) << "after the evaluation the adaptive limit is back";

  Watchdog ckpt({0}, adaptive(), clock_.now());
  ckpt.observe(step(0, 0, 100));
  ckpt.observe(step(0, 1, 100));
  ckpt.observe(at(0, ProgressKind::kPause, 1));  // `ckpt` at step 1
  clock_.advance(seconds(30));
  EXPECT_FALSE(ckpt.check(clock_.now()).stop);
  ckpt.observe(step(0, 2, 100));
  EXPECT_EQ(ckpt.limit_for(ckpt.ranks().at(0)).limit, seconds(5)) << "the next step ends it";
}

TEST_F(WatchdogTest, AfterItsDoneLineARankHasTheStallTimeoutToExit) {
  Watchdog dog({0}, adaptive(), clock_.now());
  dog.observe(at(0, ProgressKind::kPgReady));
  dog.observe(step(0, 0, 100));
  dog.observe(step(0, 1, 100));
  ASSERT_EQ(dog.limit_for(dog.ranks().at(0)).limit, seconds(5));
  dog.observe(at(0, ProgressKind::kDone));
  EXPECT_EQ(dog.limit_for(dog.ranks().at(0)).limit, seconds(60));
  EXPECT_EQ(dog.limit_for(dog.ranks().at(0)).basis, "stall_timeout_s, ending after its done line");
  clock_.advance(seconds(20));
  EXPECT_FALSE(dog.check(clock_.now()).stop) << "20 s writing a last checkpoint is no stall";
  clock_.advance(seconds(40));
  EXPECT_TRUE(dog.check(clock_.now()).stop) << "an ending that never ends is one";
}

TEST_F(WatchdogTest, TheRankThatNeverBeganTheStepIsNamedBeforeThoseWaitingForIt) {
  // hang_rank=1:2 under data parallelism: both ranks finish step 1 at the same instant; rank 0
  // begins step 2 and blocks in the all-reduce, rank 1 never begins it.
  Watchdog dog({0, 1}, limits_, clock_.now());
  for (int r : {0, 1}) {
    dog.observe(at(r, ProgressKind::kPgReady));
    dog.observe(at(r, ProgressKind::kHeartbeat, 0));
    dog.observe(at(r, ProgressKind::kHeartbeat, 1));
  }
  dog.observe(began(0, 2));
  clock_.advance(seconds(10));
  WatchdogVerdict v = dog.check(clock_.now());
  ASSERT_EQ(v.stalls.size(), 2u);
  EXPECT_EQ(v.stalls[0].rank, 1);
  EXPECT_EQ(v.stalls[1].rank, 0);

  // On a loaded machine rank 1 may write its last line a moment after rank 0 began step 2:
  // rank 0 then reaches its limit first, and rank 1 is still named first, by its progress.
  Watchdog late({0, 1}, limits_, clock_.now());
  for (int r : {0, 1}) {
    late.observe(at(r, ProgressKind::kPgReady));
    late.observe(at(r, ProgressKind::kHeartbeat, 0));
  }
  late.observe(at(0, ProgressKind::kHeartbeat, 1));
  late.observe(began(0, 2));
  clock_.advance(std::chrono::milliseconds(30));
  late.observe(at(1, ProgressKind::kHeartbeat, 1));
  clock_.advance(std::chrono::milliseconds(9970));
  v = late.check(clock_.now());
  ASSERT_EQ(v.stalls.size(), 2u);
  EXPECT_EQ(v.stalls[0].rank, 1);
  EXPECT_EQ(v.stalls[1].rank, 0);
  EXPECT_NE(v.stalls[0].describe().find("rank 1 stalled after step 1:"), std::string::npos);
  EXPECT_NE(v.stalls[1].describe().find("rank 0 stalled in step 2:"), std::string::npos);
}

TEST_F(WatchdogTest, AtEqualProgressTheRankSilentFirstIsNamedFirst) {
  Watchdog dog({0, 1, 2, 3}, limits_, clock_.now());
  for (int r : {0, 1, 2}) dog.observe(at(r, ProgressKind::kPgReady));
  dog.observe(at(2, ProgressKind::kHeartbeat, 4));
  clock_.advance(std::chrono::milliseconds(5));
  dog.observe(at(0, ProgressKind::kHeartbeat, 4));
  dog.observe(at(1, ProgressKind::kHeartbeat, 4));
  dog.observe(at(3, ProgressKind::kPgReady));
  clock_.advance(std::chrono::milliseconds(9996));
  dog.observe(at(3, ProgressKind::kHeartbeat, 9));  // rank 3 is busy: not a stalled rank
  // Rank 2 is past its limit; ranks 0 and 1, 4 ms short of it, are listed after it.
  WatchdogVerdict v = dog.check(clock_.now());
  ASSERT_EQ(v.stalls.size(), 3u);
  EXPECT_EQ(v.stalls[0].rank, 2);
  EXPECT_EQ(v.stalls[1].rank, 0);
  EXPECT_EQ(v.stalls[2].rank, 1);
}

TEST_F(WatchdogTest, ARankSilentLongerIsListedEvenWhenItsOwnLimitIsLonger) {
  // Rank 0 is timed (limit 5 s) and waits inside step 2; rank 1 hung after step 0 and has timed
  // only one step (its limit is still the 60 s cap): it is the cause, and is named first.
  Watchdog dog({0, 1}, adaptive(), clock_.now());
  for (int r : {0, 1}) dog.observe(at(r, ProgressKind::kPgReady));
  dog.observe(step(0, 0, 100));
  dog.observe(at(1, ProgressKind::kHeartbeat, 0));
  clock_.advance(std::chrono::milliseconds(100));
  dog.observe(step(0, 1, 100));
  dog.observe(began(0, 2));
  clock_.advance(seconds(5));
  WatchdogVerdict v = dog.check(clock_.now());
  ASSERT_TRUE(v.stop);
  ASSERT_EQ(v.stalls.size(), 2u);
  EXPECT_EQ(v.stalls[0].rank, 1);
  EXPECT_EQ(v.stalls[0].limit, seconds(60));
  EXPECT_EQ(v.stalls[1].rank, 0);
}

}  // namespace
}  // namespace bigmac::launch
