#include "baseline/stage_layout.h"

#include <gtest/gtest.h>

#include <vector>

namespace bigmac::baseline {
namespace {

logs::LayoutRecord layout(int stage, int num_stages, int dp_rank, std::int64_t params,
                          std::int64_t duplicates = 0) {
  logs::LayoutRecord l;
  l.stage = stage;
  l.num_stages = num_stages;
  l.dp_rank = dp_rank;
  l.param_count = params;
  l.tied_duplicate_count = duplicates;
  return l;
}

logs::RankLog rank_log(int rank, std::vector<logs::LayoutRecord> layouts) {
  logs::RankLog log;
  log.rank = rank;
  log.layouts = std::move(layouts);
  return log;
}

logs::LossRecord loss(int stage, std::int64_t step) {
  logs::LossRecord l;
  l.stage = stage;
  l.global_step = step;
  return l;
}

TEST(StageLayouts, OneLayoutPerStageFromItsLowestDataParallelReplica) {
  // Stage 1's dp_rank 0 logged last: still the one judged; of equals the first logged.
  const std::vector<logs::RankLog> logs = {
      rank_log(0, {layout(0, 2, 0, 100)}), rank_log(1, {layout(1, 2, 1, 999)}),
      rank_log(2, {layout(0, 2, 0, 555)}), rank_log(3, {layout(1, 2, 0, 200)})};
  const auto stages = stage_layouts(std::span<const logs::RankLog>(logs));
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages.at(0).record->param_count, 100);
  EXPECT_EQ(stages.at(0).log, &logs[0]);
  EXPECT_EQ(stages.at(1).record->param_count, 200);
  EXPECT_EQ(stages.at(1).log, &logs[3]);
  // A stage logged only by a later replica is still a stage.
  const std::vector<logs::RankLog> replica = {rank_log(5, {layout(1, 2, 1, 300)})};
  EXPECT_EQ(stage_layouts(std::span<const logs::RankLog>(replica)).at(1).record->param_count, 300);
}

TEST(StageParamSum, CountsATiedWeightOnce) {
  const std::vector<logs::RankLog> logs = {rank_log(0, {layout(0, 2, 0, 600, 200)}),
                                           rank_log(1, {layout(1, 2, 0, 600)})};
  const StageParamSum sum = stage_param_sum(stage_layouts(std::span<const logs::RankLog>(logs)));
  EXPECT_EQ(sum.sum, 1200);
  EXPECT_EQ(sum.tied_duplicates, 200);
  EXPECT_EQ(sum.owned(), 1000);
  EXPECT_EQ(stage_param_sum({}).owned(), 0);
}

TEST(LastStage, ThePlansLastElseTheLayoutsLast) {
  const std::vector<logs::RankLog> logs = {rank_log(0, {layout(0, 3, 0, 1)}),
                                           rank_log(1, {layout(1, 3, 0, 1)})};
  const auto stages = stage_layouts(std::span<const logs::RankLog>(logs));
  EXPECT_EQ(last_stage(2, stages), 1);  // the plan decides where it is known
  EXPECT_EQ(last_stage(0, stages), 2);  // logs alone: the stages the layouts name
  EXPECT_FALSE(last_stage(0, {}));
}

TEST(FirstLossOffLastStage, TheFirstInLogOrderNotOnTheLastStage) {
  std::vector<logs::RankLog> logs(2);
  logs[0].losses = {loss(1, 0)};
  logs[1].losses = {loss(1, 1), loss(0, 2), loss(0, 3)};
  const auto off = first_loss_off_last_stage(std::span<const logs::RankLog>(logs), 1);
  EXPECT_EQ(off.record, &logs[1].losses[1]);
  EXPECT_EQ(off.log, &logs[1]);
  EXPECT_EQ(off.record->global_step, 2);
  logs[1].losses.resize(1);
  EXPECT_EQ(first_loss_off_last_stage(std::span<const logs::RankLog>(logs), 1).record, nullptr);
}

}  // namespace
}  // namespace bigmac::baseline
