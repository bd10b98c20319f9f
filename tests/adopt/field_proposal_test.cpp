#include "adopt/field_proposal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "logs/rank_log.h"

namespace bigmac::adopt {
namespace {

using ::testing::Pair;
using ::testing::UnorderedElementsAre;

TEST(FieldProposal, FindsNamedNumbersWithTheirRoles) {
  const auto pairs = named_numbers("it 3 | loss 0.41 | lr 2e-02 | gn 0.81 | bsz 8 | 12.5ms");
  ASSERT_EQ(pairs.size(), 5u);
  EXPECT_EQ(pairs[0].name, "it");
  EXPECT_EQ(pairs[0].role, logs::MetricRole::kCounter);
  EXPECT_EQ(pairs[1].value, "0.41");
  EXPECT_EQ(pairs[1].role, logs::MetricRole::kLoss);
  EXPECT_EQ(pairs[2].value, "2e-02");
  EXPECT_EQ(pairs[2].role, logs::MetricRole::kLr);
  EXPECT_EQ(pairs[3].role, logs::MetricRole::kGradNorm);
  EXPECT_EQ(pairs[4].name, "bsz");
  EXPECT_EQ(pairs[4].role, logs::MetricRole::kOther);

  const auto two_words = named_numbers("step 4: lm loss: nan, grad norm = 1.5, time 30ms");
  ASSERT_EQ(two_words.size(), 4u);
  EXPECT_EQ(two_words[1].name, "lm loss");
  EXPECT_EQ(two_words[1].value, "nan");
  EXPECT_EQ(two_words[2].name, "grad norm");
  EXPECT_EQ(two_words[3].role, logs::MetricRole::kStepMs);
}

TEST(FieldProposal, OnlyTrainingLossLinesCarryALoss) {
  EXPECT_TRUE(carries_loss("iter 3: loss 4.44, time 30ms"));
  EXPECT_FALSE(carries_loss("step 500: train loss 4.1, val loss 4.3"));
  EXPECT_FALSE(carries_loss("loading 3 shards"));
  EXPECT_FALSE(carries_loss("the loss will be printed"));
}

// The proposed map reads every line it was made from, the counter 1-based when it starts at 1.
TEST(FieldProposal, ProposesAMapThatReadsTheLines) {
  const std::vector<std::string> lines = {
      "it 1 | loss 0.900000 | lr 5.000e-02 | gn 1.250000 | bsz 8 | 0.3ms",
      "it 2 | loss 0.700000 | lr 5.000e-02 | gn 1.000000 | bsz 8 | 0.2ms",
      "it 3 | loss nan | lr 5.000e-02 | gn 0.500000 | bsz 8 | 0.2ms"};
  const auto proposal = propose_fields(lines);
  ASSERT_TRUE(proposal.has_value());
  EXPECT_EQ(proposal->example, lines[0]);
  EXPECT_THAT(proposal->fields,
              UnorderedElementsAre(Pair("step", ::testing::_), Pair("loss", ::testing::_),
                                   Pair("lr", ::testing::_), Pair("grad_norm", ::testing::_)));
  ASSERT_EQ(proposal->unmapped.size(), 1u);
  EXPECT_EQ(proposal->unmapped[0].first, "bsz");

  auto map = logs::FieldMap::compile(proposal->fields);
  ASSERT_TRUE(map.has_value()) << map.error().format();
  logs::ParserOptions options(logs::LogFormat::kRegex);
  options.fields = std::move(*map);
  const logs::LoadedLogs loaded =
      logs::load_text(lines[0] + "\n" + lines[1] + "\n" + lines[2] + "\n", "own", options, 0);
  ASSERT_EQ(loaded.ranks.size(), 1u);
  const auto& steps = loaded.ranks[0].steps;
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].global_step, 0);
  EXPECT_DOUBLE_EQ(*steps[0].loss, 0.9);
  EXPECT_DOUBLE_EQ(*steps[1].grad_norm, 1.0);
  EXPECT_DOUBLE_EQ(*steps[1].lr, 0.05);
  EXPECT_EQ(steps[2].global_step, 2);
  EXPECT_TRUE(std::isnan(*steps[2].loss));  // a non-finite loss is read, for finite_loss to judge
}

TEST(FieldProposal, AZeroBasedCounterIsTheGlobalStep) {
  const auto proposal = propose_fields({"compiling", "step=0 loss=2.5"});
  ASSERT_TRUE(proposal.has_value());
  EXPECT_EQ(proposal->fields.count("global_step"), 1u);
  EXPECT_EQ(proposal->fields.count("step"), 0u);
  EXPECT_FALSE(propose_fields({"hello", "val loss 3.0"}).has_value());
}

}  // namespace
}  // namespace bigmac::adopt
