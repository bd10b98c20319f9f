#include "baseline/layer_coverage.h"

#include <gtest/gtest.h>

#include <vector>

namespace bigmac::baseline {
namespace {

using Kind = LayerCoverage::Kind;

logs::RankLog stage(int rank, int stage, int first, int last) {
  logs::RankLog log;
  log.rank = rank;
  logs::LayoutRecord l;
  l.at.rank = rank;
  l.stage = stage;
  l.num_stages = 2;
  l.first_layer = first;
  l.last_layer = last;
  log.layouts.push_back(l);
  return log;
}

LayerCoverage cover(const std::vector<logs::RankLog>& logs, std::optional<int> layers = 8,
                    int stages = 2) {
  return cover_layers(std::span<const logs::RankLog>(logs), layers, stages);
}

TEST(LayerCoverage, EveryLayerOnExactlyOneStageIsCovered) {
  const LayerCoverage c = cover({stage(0, 0, 0, 3), stage(1, 1, 4, 7)});
  EXPECT_EQ(c.kind, Kind::kCovered);
  EXPECT_EQ(c.stages.size(), 2u);
  EXPECT_EQ(cover({}).kind, Kind::kNoLayout);
}

TEST(LayerCoverage, NamesTheFirstGapInTheGatesOrder) {
  // Replicas of stage 1 disagree: judged before anything else.
  // The result points into the logs it judged: they outlive it.
  const std::vector<logs::RankLog> disagree = {stage(0, 0, 0, 3), stage(1, 1, 4, 7),
                                               stage(3, 1, 5, 7)};
  const LayerCoverage replicas = cover(disagree);
  EXPECT_EQ(replicas.kind, Kind::kReplicasDisagree);
  EXPECT_EQ(replicas.a.log->rank, 1);
  EXPECT_EQ(replicas.b.log->rank, 3);
  std::vector<logs::RankLog> unknown = {stage(0, 0, 0, 3), stage(1, 1, -1, -1)};
  unknown[1].layouts[0].layers_unknown = "no layer in the parameter names";
  EXPECT_EQ(cover(unknown).kind, Kind::kLayersUnknown);
  const LayerCoverage missing = cover({stage(0, 0, 0, 3)});
  EXPECT_EQ(missing.kind, Kind::kStageCount);
  EXPECT_EQ(missing.missing, std::vector<int>{1});
  // A stage without layers is judged only with every planned stage logged.
  const std::vector<logs::RankLog> layerless = {stage(0, 0, 0, 7), stage(1, 1, -1, -1)};
  const LayerCoverage empty = cover(layerless);
  EXPECT_EQ(empty.kind, Kind::kStageWithoutLayers);
  EXPECT_EQ(empty.a.record->stage, 1);
  const LayerCoverage outside = cover({stage(0, 0, 0, 3), stage(1, 1, 4, 8)});
  EXPECT_EQ(outside.kind, Kind::kLayerOutsideModel);
  EXPECT_EQ(outside.layer, 8);
  const LayerCoverage twice = cover({stage(0, 0, 0, 4), stage(1, 1, 4, 7)});
  EXPECT_EQ(twice.kind, Kind::kLayerNotOnOneStage);
  EXPECT_EQ(twice.layer, 4);
  EXPECT_EQ(twice.owners, (std::vector<int>{0, 1}));
}

TEST(LayerCoverage, WithoutTheModelsLayerCountOnlyTheStagesAreJudged) {
  EXPECT_EQ(cover({stage(0, 0, 0, 3), stage(1, 1, 4, 9)}, std::nullopt).kind, Kind::kCovered);
  EXPECT_EQ(cover({stage(0, 0, 0, 3), stage(1, 1, -1, -1)}, std::nullopt).kind,
            Kind::kStageWithoutLayers);
}

}  // namespace
}  // namespace bigmac::baseline
