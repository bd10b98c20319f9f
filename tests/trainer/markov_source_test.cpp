#include "trainer/markov_source.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

namespace bigmac::trainer {
namespace {

TEST(MarkovSource, SampleIsAPureFunctionOfSeedAndIndex) {
  MarkovSource a(64, 32, 1234);
  MarkovSource b(64, 32, 1234);
  EXPECT_EQ(a.samples(10, 3), b.samples(10, 3));
  // Sample 11 alone equals the second sample of the block starting at 10: no hidden state.
  auto block = a.samples(10, 3);
  auto single = a.samples(11, 1);
  EXPECT_TRUE(std::equal(single.begin(), single.end(), block.begin() + 33));
  EXPECT_NE(a.samples(0, 1), a.samples(1, 1));
  EXPECT_NE(MarkovSource(64, 32, 1).samples(0, 4), MarkovSource(64, 32, 2).samples(0, 4));
}

TEST(MarkovSource, TokensFollowTheChain) {
  MarkovSource source(64, 32, 7);
  auto tokens = source.samples(0, 50);
  ASSERT_EQ(tokens.size(), 50u * 33u);
  std::size_t most_likely = 0;
  std::size_t transitions = 0;
  for (std::size_t s = 0; s < 50; ++s) {
    for (std::size_t i = 1; i < 33; ++i) {
      auto prev = tokens[s * 33 + i - 1];
      auto next = tokens[s * 33 + i];
      ASSERT_GE(next, 0);
      ASSERT_LT(next, 64);
      const auto& succ = source.successors(static_cast<int>(prev));
      ASSERT_TRUE(next == succ[0] || next == succ[1] || next == succ[2]);
      most_likely += next == succ[0];
      ++transitions;
    }
  }
  double share = static_cast<double>(most_likely) / static_cast<double>(transitions);
  EXPECT_GT(share, 0.65);
  EXPECT_LT(share, 0.85);
}

TEST(MarkovSource, SuccessorsAreDistinctAndEntropyIsLow) {
  MarkovSource source(16, 8, 3);
  for (int token = 0; token < 16; ++token) {
    const auto& succ = source.successors(token);
    EXPECT_EQ(std::set<int>(succ.begin(), succ.end()).size(), 3u);
  }
  EXPECT_NEAR(MarkovSource::entropy_nats(), 0.687, 0.01);
  EXPECT_LT(MarkovSource::entropy_nats(), std::log(16.0) / 2);
}

TEST(MarkovSource, RejectsTinyVocabulary) {
  EXPECT_THROW(MarkovSource(3, 8, 1), std::invalid_argument);
}

}  // namespace
}  // namespace bigmac::trainer
