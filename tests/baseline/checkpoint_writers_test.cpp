#include "baseline/checkpoint_writers.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace bigmac::baseline {
namespace {

logs::RankLog writer(int rank, std::vector<std::int64_t> steps) {
  logs::RankLog log;
  log.rank = rank;
  for (const std::int64_t step : steps) {
    logs::CheckpointRecord c;
    c.at.rank = rank;
    c.step = step;
    c.path = "ckpt/step" + std::to_string(step) + ".pt";
    log.checkpoints.push_back(c);
  }
  return log;
}

TEST(CheckpointWriters, EachRankOnceInRankOrderWithItsFirstCheckpoint) {
  // Rank 2's log comes first, rank 0 has two logs (its own and the probe's), rank 1 wrote none.
  const std::vector<logs::RankLog> logs = {writer(2, {20, 30}), writer(0, {10}), writer(1, {}),
                                           writer(0, {15})};
  const auto writers = checkpoint_writers(std::span<const logs::RankLog>(logs));
  ASSERT_EQ(writers.size(), 2u);
  EXPECT_EQ(writers[0].log, &logs[1]);
  EXPECT_EQ(writers[0].record->step, 10);
  EXPECT_EQ(writers[1].log->rank, 2);
  EXPECT_EQ(writers[1].record->step, 20);
  const std::vector<logs::RankLog> none = {writer(0, {}), writer(1, {})};
  EXPECT_TRUE(checkpoint_writers(std::span<const logs::RankLog>(none)).empty());
}

}  // namespace
}  // namespace bigmac::baseline
