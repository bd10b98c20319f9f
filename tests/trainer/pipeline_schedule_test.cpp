#include "trainer/pipeline_schedule.h"

#include <gtest/gtest.h>

namespace bigmac::trainer {
namespace {

using Phase = PipeAction::Phase;
constexpr Phase F = Phase::kForward;
constexpr Phase B = Phase::kBackward;

TEST(PipelineSchedule, GpipeRunsAllForwardsThenAllBackwards) {
  EXPECT_EQ(pipeline_schedule("gpipe", 0, 2, 3),
            (std::vector<PipeAction>{{F, 0}, {F, 1}, {F, 2}, {B, 0}, {B, 1}, {B, 2}}));
}

TEST(PipelineSchedule, OneFOneBWarmsUpByDistanceToTheLastStage) {
  EXPECT_EQ(
      pipeline_schedule("1f1b", 0, 2, 4),
      (std::vector<PipeAction>{{F, 0}, {F, 1}, {B, 0}, {F, 2}, {B, 1}, {F, 3}, {B, 2}, {B, 3}}));
  EXPECT_EQ(
      pipeline_schedule("1f1b", 1, 2, 4),
      (std::vector<PipeAction>{{F, 0}, {B, 0}, {F, 1}, {B, 1}, {F, 2}, {B, 2}, {F, 3}, {B, 3}}));
  // More stages than micro-batches: the warm-up is capped at M.
  EXPECT_EQ(pipeline_schedule("1f1b", 0, 4, 2),
            (std::vector<PipeAction>{{F, 0}, {F, 1}, {B, 0}, {B, 1}}));
}

TEST(PipelineSchedule, EveryMicroBatchOnceForwardBeforeBackward) {
  for (const char* name : {"1f1b", "gpipe"}) {
    for (int stages = 1; stages <= 4; ++stages) {
      for (int stage = 0; stage < stages; ++stage) {
        for (int m = 1; m <= 8; ++m) {
          auto actions = pipeline_schedule(name, stage, stages, m);
          ASSERT_EQ(actions.size(), static_cast<std::size_t>(2 * m));
          std::vector<int> forwarded(static_cast<std::size_t>(m)), backwarded(forwarded);
          int next_backward = 0;
          for (const auto& action : actions) {
            auto mb = static_cast<std::size_t>(action.mb);
            if (action.phase == F) {
              ++forwarded[mb];
            } else {
              EXPECT_EQ(forwarded[mb], 1) << "backward before forward";
              EXPECT_EQ(action.mb, next_backward++) << "backwards in micro-batch order";
              ++backwarded[mb];
            }
          }
          EXPECT_EQ(forwarded, std::vector<int>(static_cast<std::size_t>(m), 1));
          EXPECT_EQ(backwarded, std::vector<int>(static_cast<std::size_t>(m), 1));
        }
      }
    }
  }
  EXPECT_TRUE(pipeline_schedule("zigzag", 0, 2, 2).empty());
}

}  // namespace
}  // namespace bigmac::trainer
