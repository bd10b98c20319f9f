#include "core/edit_distance.h"

#include <gtest/gtest.h>

#include <array>

namespace bigmac {
namespace {

TEST(EditDistance, CountsInsertionsDeletionsSubstitutions) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", "abc"), 0u);
  EXPECT_EQ(edit_distance("shedule", "schedule"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("trian", "train"), 1u);  // a transposition is one edit
}

TEST(ClosestMatch, SuggestsOnlyPlausibleTypos) {
  std::array<std::string_view, 3> keys = {"schedule", "pp_size", "tp_size"};
  EXPECT_EQ(closest_match("shedule", keys), "schedule");
  EXPECT_EQ(closest_match("pp_sise", keys), "pp_size");
  EXPECT_FALSE(closest_match("learning_rate", keys).has_value());
}

}  // namespace
}  // namespace bigmac
