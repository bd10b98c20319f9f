#include "launch/line_clock.h"

#include <gtest/gtest.h>

#include "testing/fake_clock.h"

namespace bigmac::launch {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Wall times near 1.7e9 s carry about 0.2 us of rounding.
::testing::AssertionResult Near(Clock::time_point a, Clock::time_point b) {
  const auto d = a > b ? a - b : b - a;
  if (d < std::chrono::microseconds(1)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "off by " << seconds_of(d) << " s";
}

TEST(LineClock, ALineWithoutTimeIsPlacedWhenItWasRead) {
  testing::FakeClock clock;
  LineClock lines;
  EXPECT_TRUE(Near(lines.place(0, 0, clock.now(), clock.wall_seconds()), clock.now()));
}

TEST(LineClock, LinesReadTogetherKeepTheTimesTheyWereLoggedAt) {
  testing::FakeClock clock;
  LineClock lines;
  const double logged = clock.wall_seconds();
  // The rank's first line, read 10 ms after it was written: that is the rank's delay.
  clock.advance(milliseconds(10));
  EXPECT_TRUE(Near(lines.place(1, logged, clock.now(), clock.wall_seconds()), clock.now()));
  // Two lines logged 2 s apart, read in one poll: the older one is dated 2 s earlier.
  clock.advance(seconds(3));
  const double older = clock.wall_seconds() - 2.01;
  const double newer = clock.wall_seconds() - 0.01;
  EXPECT_TRUE(
      Near(lines.place(1, older, clock.now(), clock.wall_seconds()), clock.now() - seconds(2)));
  EXPECT_TRUE(Near(lines.place(1, newer, clock.now(), clock.wall_seconds()), clock.now()));
}

TEST(LineClock, AClockSkewOfTheRankCancelsOut) {
  testing::FakeClock clock;
  LineClock lines;
  // Rank 3 runs on a node whose clock is 100 s ahead; its lines are read 5 ms after logging.
  const double skew = 100;
  clock.advance(milliseconds(5));
  EXPECT_TRUE(
      Near(lines.place(3, clock.wall_seconds() - 0.005 + skew, clock.now(), clock.wall_seconds()),
           clock.now()));
  clock.advance(seconds(1));
  EXPECT_TRUE(
      Near(lines.place(3, clock.wall_seconds() - 0.005 + skew, clock.now(), clock.wall_seconds()),
           clock.now()))
      << "never dated after its reading, whatever the skew";
  clock.advance(seconds(1));
  EXPECT_TRUE(
      Near(lines.place(3, clock.wall_seconds() - 0.505 + skew, clock.now(), clock.wall_seconds()),
           clock.now() - milliseconds(500)));
  // Another rank's delay is its own.
  EXPECT_TRUE(Near(lines.place(4, clock.wall_seconds() - 30, clock.now(), clock.wall_seconds()),
                   clock.now()));
}

}  // namespace
}  // namespace bigmac::launch
