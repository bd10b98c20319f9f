#include "core/map_changes.h"

#include <gtest/gtest.h>

namespace bigmac {
namespace {

TEST(MapChanges, ChangedAndRemovedKeysInOrderThenAddedOnes) {
  const std::map<std::string, std::string> before = {{"a", "1"}, {"b", "2"}, {"c", "3"}};
  const std::map<std::string, std::string> after = {{"a", "1"}, {"b", "5"}, {"d", "4"}};
  const std::vector<MapChange> changes = map_changes(before, after);
  ASSERT_EQ(changes.size(), 3u);
  EXPECT_EQ(changes[0].key, "b");
  EXPECT_EQ(changes[0].before, "2");
  EXPECT_EQ(changes[0].after, "5");
  EXPECT_EQ(changes[1].key, "c");
  EXPECT_FALSE(changes[1].after);
  EXPECT_EQ(changes[2].key, "d");
  EXPECT_FALSE(changes[2].before);
  EXPECT_EQ(changes[2].after, "4");
  EXPECT_TRUE(map_changes(before, before).empty());
}

}  // namespace
}  // namespace bigmac
