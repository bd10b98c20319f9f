#include "trainer/bigmac_model.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace bigmac::trainer {
namespace {

ModelShape small_shape() {
  ModelShape shape;
  shape.num_layers = 3;
  shape.hidden = 16;
  shape.heads = 2;
  shape.vocab = 24;
  shape.ffn_mult = 2;
  shape.seq_length = 8;
  return shape;
}

TEST(BigMacModel, LayersKeepTheirIdsInOrder) {
  BigMac model(small_shape());
  ASSERT_EQ(model->num_layers(), 3);
  for (int id = 0; id < 3; ++id) EXPECT_EQ(model->layer(id)->layer_id(), id);
}

TEST(BigMacModel, ParamCountMatchesTheArchitecture) {
  ModelShape shape = small_shape();
  const std::int64_t h = shape.hidden, v = shape.vocab, f = shape.ffn_mult * h;
  const std::int64_t block =
      2 * (2 * h) + (h * 3 * h + 3 * h) + (h * h + h) + (h * f + f) + (f * h + h);
  const std::int64_t tied = v * h + shape.seq_length * h + 3 * block + 2 * h;
  EXPECT_EQ(param_count(*BigMac(shape)), tied);
  shape.tie_embeddings = false;
  EXPECT_EQ(param_count(*BigMac(shape)), tied + v * h) << "an untied head adds vocab x hidden";
}

TEST(BigMacModel, ForwardShapesAndCausality) {
  BigMac model(small_shape());
  model->initialize(1);
  auto tokens = at::randint(0, 24, {2, 8}, at::kLong);
  auto logits = model->forward(tokens);
  EXPECT_EQ(logits.sizes(), (std::vector<std::int64_t>{2, 8, 24}));
  // Changing the last token must not change the logits of earlier positions.
  auto changed = tokens.clone();
  changed.index_put_({0, 7}, (tokens.index({0, 7}) + 1) % 24);
  auto other = model->forward(changed);
  EXPECT_TRUE(at::allclose(logits.narrow(1, 0, 7), other.narrow(1, 0, 7)));
  EXPECT_FALSE(at::allclose(logits.narrow(1, 7, 1), other.narrow(1, 7, 1)));
  // The parts compose to the whole: what a pipeline stage runs.
  auto hidden = model->run_layers(model->embed(tokens), 0, 1);
  auto staged = model->head(model->run_layers(hidden, 2, 2));
  EXPECT_TRUE(at::allclose(staged, logits));
}

TEST(BigMacModel, InitialisationDependsOnTheSeedOnly) {
  BigMac a(small_shape()), b(small_shape()), c(small_shape());
  a->initialize(42);
  at::manual_seed(999);  // the global generator must not matter
  b->initialize(42);
  c->initialize(43);
  EXPECT_EQ(param_digest(*a), param_digest(*b));
  EXPECT_NE(param_digest(*a), param_digest(*c));
  EXPECT_EQ(param_digest(*a).size(), 16u);
}

TEST(BigMacModel, InitialLossIsNearUniformAndEveryParameterGetsAGradient) {
  BigMac model(small_shape());
  model->initialize(5);
  auto tokens = at::randint(0, 24, {4, 9}, at::kLong);
  auto inputs = tokens.narrow(1, 0, 8), labels = tokens.narrow(1, 1, 8);
  auto loss = next_token_loss(model->forward(inputs), labels);
  EXPECT_NEAR(loss.item<double>(), std::log(24.0), 0.3);
  loss.backward();
  for (const auto& param : model->parameters()) ASSERT_TRUE(param.grad().defined());
}

TEST(BigMacModel, StagesOwnEveryParameterOnceExceptTheTiedCopy) {
  BigMac model(small_shape());
  auto names = [](const std::vector<std::pair<std::string, torch::Tensor>>& owned) {
    std::vector<std::string> out;
    for (const auto& item : owned) out.push_back(item.first);
    return out;
  };
  auto whole = stage_parameters(*model, {0, 2}, true, true);
  EXPECT_EQ(whole.size(), model->named_parameters().size()) << "one stage owns everything";
  auto first = names(stage_parameters(*model, {0, 0}, true, false));
  auto middle = names(stage_parameters(*model, {1, 1}, false, false));
  auto last = names(stage_parameters(*model, {2, 2}, false, true));
  EXPECT_EQ(first.front(), "token_embedding.weight");
  EXPECT_EQ(last.front(), kTiedWeight) << "the last stage holds the tied copy";
  EXPECT_EQ(middle.front().rfind("blocks.1.", 0), 0u);
  EXPECT_EQ(first.size() + middle.size() + last.size(), whole.size() + 1);
  for (const auto& name : middle) EXPECT_EQ(name.rfind("blocks.1.", 0), 0u) << name;
}

TEST(BigMacModel, RejectsHiddenNotDivisibleByHeads) {
  ModelShape shape = small_shape();
  shape.heads = 3;
  EXPECT_THROW(BigMac{shape}, std::invalid_argument);
}

}  // namespace
}  // namespace bigmac::trainer
