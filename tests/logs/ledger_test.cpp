#include "logs/ledger.h"

#include <gtest/gtest.h>

namespace bigmac::logs {
namespace {

CollectiveRecord entry(int rank, std::string group, std::int64_t seq, std::string op,
                       std::vector<std::int64_t> shape, std::string site, double t = 0) {
  CollectiveRecord c;
  c.at.rank = rank;
  c.at.t = t;
  c.group = std::move(group);
  c.seq = seq;
  c.op = std::move(op);
  c.shape = std::move(shape);
  if (!c.shape.empty()) c.dtype = "float32";
  c.site = std::move(site);
  return c;
}

TEST(Ledger, MembersOfTheWorldAGroupAndAChannel) {
  EXPECT_TRUE(member_of("world", 7));
  EXPECT_TRUE(member_of("0,2", 2));
  EXPECT_FALSE(member_of("0,2", 1));
  EXPECT_FALSE(member_of("10,12", 1));
  EXPECT_TRUE(member_of("0->1", 0));
  EXPECT_TRUE(member_of("0->1", 1));
  EXPECT_FALSE(member_of("0->1", 2));
  EXPECT_FALSE(member_of("10->11", 1));
}

TEST(Ledger, AgreeingLedgersHaveNoSplitEvenWhenOneRankGotFurther) {
  const std::map<int, std::vector<CollectiveRecord>> ledgers = {
      {0,
       {entry(0, "world", 0, "all_reduce", {4}, "t.py:9"),
        entry(0, "world", 1, "all_reduce", {4}, "t.py:9")}},
      {1, {entry(1, "world", 0, "all_reduce", {4}, "t.py:9")}}};
  EXPECT_FALSE(first_split(ledgers));
  // A send and its receive agree on their channel.
  EXPECT_FALSE(first_split({{0, {entry(0, "0->1", 0, "send", {2, 4}, "p.py:3")}},
                            {1, {entry(1, "0->1", 0, "recv", {2, 4}, "p.py:8")}}}));
}

TEST(Ledger, TheFirstIndexWithDifferentShapesIsTheSplitWithEveryRanksLine) {
  const std::map<int, std::vector<CollectiveRecord>> ledgers = {
      {0,
       {entry(0, "world", 5, "all_reduce", {1}, "t.py:42"),
        entry(0, "world", 6, "all_reduce", {1, 4}, "t.py:42"),
        entry(0, "world", 7, "all_reduce", {1}, "t.py:42")}},
      {1,
       {entry(1, "world", 5, "all_reduce", {1}, "t.py:42"),
        entry(1, "world", 6, "all_reduce", {145}, "t.py:50")}}};
  const auto split = first_split(ledgers);
  ASSERT_TRUE(split);
  EXPECT_EQ(split->seq, 6);
  EXPECT_FALSE(split->different_ops);
  EXPECT_EQ(split->odd, (std::vector<int>{0, 1}));  // two ranks, two calls: no majority
  EXPECT_EQ(split->describe(),
            "all_reduce #6 of world: rank 0 called all_reduce (float32[1,4], t.py:42); rank 1 "
            "called all_reduce (float32[145], t.py:50)");
}

TEST(Ledger, TheOddCallOutOfThreeIsNamedAndAnEarlierGroupSplitWins) {
  std::map<int, std::vector<CollectiveRecord>> ledgers;
  for (int r : {0, 1, 2}) {
    ledgers[r].push_back(entry(r, "world", 3, r == 2 ? "barrier" : "all_reduce",
                               r == 2 ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{8},
                               r == 2 ? "t.py:30" : "t.py:31", 10.0));
  }
  auto split = first_split(ledgers);
  ASSERT_TRUE(split);
  EXPECT_TRUE(split->different_ops);
  EXPECT_EQ(split->odd, (std::vector<int>{2}));
  // Another group parted earlier (by the time its calls began): that split comes first.
  ledgers[0].push_back(entry(0, "0,1", 0, "broadcast", {2}, "t.py:12", 5.0));
  ledgers[1].push_back(entry(1, "0,1", 0, "broadcast", {3}, "t.py:12", 5.5));
  split = first_split(ledgers);
  ASSERT_TRUE(split);
  EXPECT_EQ(split->group, "0,1");
}

}  // namespace
}  // namespace bigmac::logs
