#include "launch/rank_placement.h"

#include <gtest/gtest.h>

namespace bigmac::launch {
namespace {

TEST(RankPlacement, RoundTripsThroughItsLine) {
  RankPlacement p;
  p.rank = 3;
  p.local_rank = 1;
  p.node_rank = 1;
  p.node = "n2";
  p.job_step = "12.0";
  p.parent = 4242;
  const std::string line = placement_line(p);
  EXPECT_EQ(line,
            "bigmac-rank-env: placement rank=3 local_rank=1 node_rank=1 node=n2 job_step=12.0 "
            "parent=4242");
  EXPECT_EQ(parse_placement_line(line), p);
}

TEST(RankPlacement, EmptyFieldsRoundTrip) {
  RankPlacement p;
  p.rank = 0;
  auto back = parse_placement_line(placement_line(p));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->node, "");
  EXPECT_EQ(back->job_step, "");
}

TEST(RankPlacement, OtherLinesAreNotPlacements) {
  EXPECT_FALSE(parse_placement_line("RuntimeError: boom"));
  EXPECT_FALSE(parse_placement_line("bigmac-rank-env: placement node=n1"));
  EXPECT_FALSE(parse_placement_line("bigmac-rank-env: placement rank=x"));
  EXPECT_FALSE(parse_placement_line("bigmac-rank-env: error: $SLURM_PROCID is not set"));
}

}  // namespace
}  // namespace bigmac::launch
