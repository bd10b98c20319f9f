#include "trainer/layer_split.h"

#include <gtest/gtest.h>

namespace bigmac::trainer {
namespace {

TEST(LayerSplit, EvenSplitGivesTheRemainderToTheFirstStages) {
  EXPECT_EQ(split_points(4, 1), std::vector<int>{});
  EXPECT_EQ(split_points(4, 2), std::vector<int>{2});
  EXPECT_EQ(split_points(7, 3), (std::vector<int>{3, 5}));
  EXPECT_EQ(split_points(4, 4), (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(split_points(2, 3).empty()) << "fewer layers than stages has no split";
}

TEST(LayerSplit, StagesCoverEveryLayerExactlyOnce) {
  for (int layers = 1; layers <= 9; ++layers) {
    for (int pp = 1; pp <= layers; ++pp) {
      auto points = split_points(layers, pp);
      ASSERT_TRUE(check_split_points(layers, pp, points)) << layers << "/" << pp;
      int next = 0;
      for (int stage = 0; stage < pp; ++stage) {
        LayerRange range = stage_layers(layers, points, stage);
        EXPECT_EQ(range.first, next);
        EXPECT_GE(range.size(), 1);
        next = range.last + 1;
      }
      EXPECT_EQ(next, layers);
    }
  }
}

TEST(LayerSplit, ExplicitPointsAndOutOfRangeStages) {
  std::vector<int> points{1, 3};
  EXPECT_EQ(stage_layers(4, points, 0), (LayerRange{0, 0}));
  EXPECT_EQ(stage_layers(4, points, 1), (LayerRange{1, 2}));
  EXPECT_EQ(stage_layers(4, points, 2), (LayerRange{3, 3}));
  EXPECT_EQ(stage_layers(4, points, 3), LayerRange{});
  EXPECT_EQ(LayerRange{}.size(), 0);
  EXPECT_TRUE((LayerRange{1, 2}).contains(2));
  EXPECT_FALSE(LayerRange{}.contains(0));
}

TEST(LayerSplit, CheckNamesWhatIsWrong) {
  std::vector<int> wrong_count{1, 2};
  auto count = check_split_points(4, 2, wrong_count);
  ASSERT_FALSE(count);
  EXPECT_EQ(count.error().key, "model.split_points");
  EXPECT_NE(count.error().message.find("expected 1"), std::string::npos);
  std::vector<int> outside{4};
  EXPECT_FALSE(check_split_points(4, 2, outside));
  std::vector<int> decreasing{2, 2};
  EXPECT_FALSE(check_split_points(4, 3, decreasing));
  EXPECT_FALSE(check_split_points(2, 3, {}));
}

}  // namespace
}  // namespace bigmac::trainer
