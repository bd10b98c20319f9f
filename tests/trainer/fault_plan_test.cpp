#include "trainer/fault_plan.h"

#include <gtest/gtest.h>

namespace bigmac::trainer {
namespace {

TEST(FaultPlan, DefaultsInjectNothing) {
  auto plan = parse_fault_plan(config::FaultsConfig{});
  ASSERT_TRUE(plan);
  for (int rank = 0; rank < 4; ++rank) {
    for (int step = -1; step < 30; ++step) {
      EXPECT_FALSE(plan->crashes(rank, step));
      EXPECT_FALSE(plan->hangs(rank, step));
    }
    EXPECT_EQ(plan->port_offset_for(rank), 0);
  }
  EXPECT_EQ(plan->nan_at_step, -1);
  EXPECT_FALSE(plan->all_ranks_checkpoint);
}

TEST(FaultPlan, RankAndStepPairsHitOnlyTheirRankAndStep) {
  config::FaultsConfig faults;
  faults.crash_rank = "1:5";
  faults.hang_rank = "0:-1";
  faults.master_port_offset = "2:7";
  auto plan = parse_fault_plan(faults);
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->crashes(1, 5));
  EXPECT_FALSE(plan->crashes(0, 5));
  EXPECT_FALSE(plan->crashes(1, 4));
  EXPECT_TRUE(plan->hangs(0, -1));
  EXPECT_EQ(plan->port_offset_for(2), 7);
  EXPECT_EQ(plan->port_offset_for(1), 0);
}

TEST(FaultPlan, MalformedPairNamesTheKey) {
  for (const char* text : {"5", "a:1", "1:", "-1:2", "1:2:3", ":"}) {
    config::FaultsConfig faults;
    faults.hang_rank = text;
    auto plan = parse_fault_plan(faults);
    ASSERT_FALSE(plan) << text;
    EXPECT_EQ(plan.error().key, "faults.hang_rank");
    EXPECT_EQ(plan.error().kind, ErrorKind::kConfig);
  }
}

}  // namespace
}  // namespace bigmac::trainer
