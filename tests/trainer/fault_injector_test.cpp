#include "trainer/fault_injector.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

namespace bigmac::trainer {
namespace {

FaultInjector injector(const config::FaultsConfig& faults, RankPosition at) {
  auto plan = parse_fault_plan(faults);
  EXPECT_TRUE(plan);
  return FaultInjector(*plan, at);
}

TEST(FaultInjector, WithoutFaultsEveryHookPassesItsInputThrough) {
  FaultInjector none = injector({}, RankPosition{0, 0, 2, 4});
  EXPECT_DOUBLE_EQ(none.learning_rate(3e-3), 3e-3);
  EXPECT_EQ(none.micro_batch_samples(3, 4, 2), 2);
  EXPECT_EQ(none.step_log_copies(0), 1);
  EXPECT_TRUE(none.synchronises_tied_weights());
  EXPECT_TRUE(none.writes_checkpoints());
  EXPECT_FALSE(none.computes_stray_loss());
  auto logits = at::ones({2, 3});
  EXPECT_TRUE(at::equal(none.logits(logits, 0), logits));
  auto hidden = at::ones({2, 8, 4});
  EXPECT_TRUE(at::equal(none.outgoing_activation(hidden), hidden));
  auto grad_owner = at::ones({3}).requires_grad_(true);
  grad_owner.sum().backward();
  none.gradients({grad_owner}, 5);
  EXPECT_TRUE(at::equal(grad_owner.grad(), at::ones({3})));
  none.before_rendezvous();  // returns: no hang at -1
  none.at_step_start(0);     // returns: no crash, hang or stall
  EXPECT_FALSE(injector({}, RankPosition{1, 1, 2, 4}).writes_checkpoints());
}

TEST(FaultInjector, StepLogFaultsSkipOrRepeatOneStep) {
  config::FaultsConfig faults;
  faults.skip_step_log = 2;
  faults.dup_step_log = 4;
  FaultInjector f = injector(faults, RankPosition{});
  EXPECT_EQ(f.step_log_copies(1), 1);
  EXPECT_EQ(f.step_log_copies(2), 0);
  EXPECT_EQ(f.step_log_copies(4), 2);
}

TEST(FaultInjector, NumericFaultsChangeTheRealValues) {
  config::FaultsConfig faults;
  faults.nan_at_step = 3;
  faults.grad_blowup = 10;
  faults.lr_scale_by_world = true;
  faults.ragged_microbatch = true;
  faults.all_ranks_checkpoint = true;
  FaultInjector f = injector(faults, RankPosition{2, 0, 1, 4});
  EXPECT_DOUBLE_EQ(f.learning_rate(1e-3), 4e-3);
  EXPECT_EQ(f.micro_batch_samples(3, 4, 2), 1);  // the last micro-batch only
  EXPECT_EQ(f.micro_batch_samples(2, 4, 2), 2);
  EXPECT_TRUE(f.writes_checkpoints());
  EXPECT_FALSE(at::isnan(f.logits(at::ones({2}), 2)).any().item<bool>());
  EXPECT_TRUE(at::isnan(f.logits(at::ones({2}), 3)).all().item<bool>());
  auto w = at::ones({2}).requires_grad_(true);
  w.sum().backward();
  f.gradients({w}, 2);
  EXPECT_TRUE(at::allclose(w.grad(), at::full({2}, 100.0)));
}

TEST(FaultInjector, BoundaryFaultsActOnTheFirstStageOnly) {
  config::FaultsConfig faults;
  faults.boundary_seq_trim = 3;
  faults.boundary_dtype = "bf16";
  faults.middle_stage_loss = true;
  auto hidden = at::ones({2, 8, 4});
  auto sent = injector(faults, RankPosition{0, 0, 3, 3}).outgoing_activation(hidden);
  EXPECT_EQ(sent.sizes().vec(), (std::vector<std::int64_t>{2, 5, 4}));
  EXPECT_EQ(sent.scalar_type(), at::kBFloat16);
  auto middle = injector(faults, RankPosition{1, 1, 3, 3});
  EXPECT_TRUE(at::equal(middle.outgoing_activation(hidden), hidden));
  EXPECT_TRUE(middle.computes_stray_loss());
  EXPECT_FALSE(injector(faults, RankPosition{2, 2, 3, 3}).computes_stray_loss());
}

TEST(FaultInjector, UntiedSyncStopsTheTiedWeightExchange) {
  config::FaultsConfig faults;
  faults.untied_sync = true;
  EXPECT_FALSE(injector(faults, RankPosition{}).synchronises_tied_weights());
}

}  // namespace
}  // namespace bigmac::trainer
