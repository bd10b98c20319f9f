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

TEST(Ledger, TheRankThatNeverReachedACallIsTheGapWithItsLastEntry) {
  CollectiveRecord bucket = entry(0, "world", 2, "all_reduce", {5}, "t.py:57", 12.0);
  bucket.by = "DDP bucket 0";
  const std::map<int, std::vector<CollectiveRecord>> ledgers = {
      {0,
       {entry(0, "world", 0, "all_reduce", {5}, "t.py:57"),
        entry(0, "world", 1, "broadcast", {1}, "t.py:70"), bucket}},
      {1,
       {entry(1, "world", 0, "all_reduce", {5}, "t.py:57"),
        entry(1, "world", 1, "broadcast", {1}, "t.py:70")}},
      {2,
       {entry(2, "world", 0, "all_reduce", {5}, "t.py:57"),
        entry(2, "world", 1, "broadcast", {1}, "t.py:70"),
        entry(2, "world", 2, "all_reduce", {5}, "t.py:57", 11.5)}}};
  EXPECT_FALSE(first_split(ledgers));
  const auto gap = first_gap(ledgers);
  ASSERT_TRUE(gap);
  EXPECT_EQ(gap->callers, (std::vector<int>{0, 2}));
  EXPECT_EQ(gap->missing, (std::vector<int>{1}));
  EXPECT_EQ(gap->describe(),
            "all_reduce #2 of world (float32[5], DDP bucket 0, t.py:57), which ranks 0, 2 called");
  EXPECT_EQ(gap->last_of(1), "broadcast #1 of world (float32[1], t.py:70)");
}

TEST(Ledger, AMemberWithNoCallOnAGroupIsMissingFromItAndAnEarlierGapWins) {
  // Rank 1 never sent on 1->0 (where rank 0 waits to receive, from t=3), and never reached
  // world #1 (which rank 0 called at t=5): the channel's gap began first.
  const std::map<int, std::vector<CollectiveRecord>> ledgers = {
      {0,
       {entry(0, "world", 0, "barrier", {}, "t.py:3"),
        entry(0, "1->0", 0, "recv", {2, 4}, "t.py:8", 3.0),
        entry(0, "world", 1, "barrier", {}, "t.py:3", 5.0)}},
      {1, {entry(1, "world", 0, "barrier", {}, "t.py:3")}},
      {2, {entry(2, "world", 0, "barrier", {}, "t.py:3")}}};
  const auto gap = first_gap(ledgers);
  ASSERT_TRUE(gap);
  EXPECT_EQ(gap->call.group, "1->0");
  EXPECT_EQ(gap->missing, (std::vector<int>{1}));  // rank 2 is no member of the channel
  EXPECT_EQ(gap->last_of(1), "no collective on 1->0");
  EXPECT_FALSE(first_gap({{0, {entry(0, "world", 0, "barrier", {}, "t.py:3")}},
                          {1, {entry(1, "world", 0, "barrier", {}, "t.py:3")}}}));
}

}  // namespace
}  // namespace bigmac::logs
