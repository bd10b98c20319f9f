#include "diagnose/rank_set.h"

#include <gtest/gtest.h>

namespace bigmac::diagnose {
namespace {

TEST(RankSet, CountsDistinctRanksAndPrintsRanges) {
  RankSet s;
  for (int r = 63; r >= 0; --r) s.add(r);
  s.add(65);
  s.add(65);
  s.add(70);
  s.add(71);
  s.add(-1);                 // unknown ranks are not counted
  s.add(RankSet::kMaxRank);  // nor absurd ones
  EXPECT_EQ(s.size(), 67u);
  EXPECT_TRUE(s.contains(65));
  EXPECT_FALSE(s.contains(64));
  EXPECT_EQ(s.ranges(), "0-63,65,70-71");
  EXPECT_EQ(s.values().front(), 0);
  EXPECT_EQ(s.values().back(), 71);
}

TEST(RankSet, LongListsAreCut) {
  RankSet s;
  for (int r = 0; r < 40; r += 2) s.add(r);
  EXPECT_EQ(s.ranges(3), "0,2,4,... (17 more)");
  EXPECT_EQ(format_ranges({}), "");
  EXPECT_EQ(format_ranges({5}), "5");
}

}  // namespace
}  // namespace bigmac::diagnose
