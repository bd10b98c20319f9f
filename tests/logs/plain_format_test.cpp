#include <gtest/gtest.h>

#include <cmath>

#include "logs/metric_line.h"
#include "stream_fixture.h"

namespace bigmac::logs {
namespace {

using testing::extra;
using testing::parse_text;

// karpathy/nanoGPT train.py: `print(f"step {iter_num}: train loss {losses['train']:.4f}, val
// loss {losses['val']:.4f}")` every eval_interval, `print(f"iter {iter_num}: loss {lossf:.4f},
// time {dt*1000:.2f}ms, mfu {running_mfu*100:.2f}%")` every log_interval, iter_num from 0.
constexpr std::string_view kNanoGpt =
    "number of parameters: 10.65M\n"
    "step 0: train loss 4.2874, val loss 4.2823\n"
    "iter 0: loss 4.2654, time 29918.32ms, mfu -100.00%\n"
    "iter 10: loss 3.2407, time 140.06ms, mfu 2.66%\n"
    "iter 20: loss 2.7829, time 139.59ms, mfu 2.66%\n";

TEST(PlainLines, ReadsNanoGptAndSkipsItsEvaluation) {
  auto parsed = parse_text(kNanoGpt);
  auto steps = parsed.all<StepRecord>();
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(parsed.stats.detected, LogFormat::kPlain);
  // The first counter is 0: the counter is 0-based and kept.
  EXPECT_EQ(steps[0].global_step, 0);
  EXPECT_EQ(steps[1].global_step, 10);
  EXPECT_DOUBLE_EQ(*steps[1].loss, 3.2407);
  EXPECT_DOUBLE_EQ(*steps[1].step_ms, 140.06);  // `time` with a unit is the step time
  EXPECT_DOUBLE_EQ(extra(steps[1], "mfu"), 2.66);
  EXPECT_DOUBLE_EQ(extra(steps[0], "mfu"), -100.0);
  EXPECT_EQ(parsed.stats.context_lines, 2);  // the parameter count and the evaluation line
}

TEST(PlainLines, TheIssuesExamples) {
  // `it N | loss X | lr Y` with a 1-based counter, and `iter 3: loss 4.44, time 30ms`.
  auto steps =
      parse_text("it 1 | loss 2.31 | lr 0.0001\nit 2 | loss 2.25 | lr 0.0001\n").all<StepRecord>();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].global_step, 0);  // first counter 1: counts finished steps
  EXPECT_EQ(steps[1].global_step, 1);
  EXPECT_DOUBLE_EQ(*steps[1].lr, 1e-4);
  steps = parse_text("iter 3: loss 4.44, time 30ms\n").all<StepRecord>();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].global_step, 2);
  EXPECT_DOUBLE_EQ(*steps[0].step_ms, 30);
}

TEST(PlainLines, SeparatorsAndSpellings) {
  auto steps = parse_text(
                   "step=1 loss=2.5 learning_rate=3e-4 gradient_norm=0.5 samples_per_step=16\n"
                   "Step: 2, Loss: 2.4, Learning Rate: 3.0E-04, Grad Norm: 0.4, dt: 0.12s\n"
                   "[step 3/100] train_loss 2.3; total_norm 0.3; tokens/s 1200\n"
                   "step 4 | lm loss: 2.2 | time: 12.5ms/step\n")
                   .all<StepRecord>();
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].global_step, 0);
  EXPECT_DOUBLE_EQ(*steps[0].lr, 3e-4);
  EXPECT_DOUBLE_EQ(*steps[0].grad_norm, 0.5);
  EXPECT_EQ(*steps[0].samples_per_step, 16);
  EXPECT_DOUBLE_EQ(*steps[1].lr, 3e-4);
  EXPECT_DOUBLE_EQ(*steps[1].grad_norm, 0.4);
  EXPECT_DOUBLE_EQ(*steps[1].step_ms, 120);  // seconds become milliseconds
  EXPECT_DOUBLE_EQ(*steps[2].loss, 2.3);
  EXPECT_DOUBLE_EQ(*steps[2].grad_norm, 0.3);
  EXPECT_DOUBLE_EQ(extra(steps[2], "total_steps"), 100);
  EXPECT_DOUBLE_EQ(extra(steps[2], "tokens_s"), 1200);
  EXPECT_EQ(steps[3].global_step, 3);
  EXPECT_DOUBLE_EQ(*steps[3].loss, 2.2);
  EXPECT_FALSE(steps[3].step_ms.has_value());  // `ms/step` is no unit this reader knows
}

TEST(PlainLines, NanochatStyleProgressLine) {
  // karpathy/nanochat scripts/base_train.py (PR #242): `step {step:05d}/{num_iterations:05d}
  // ({pct_done:.2f}%) | loss: {...:.6f} | grad_norm: {...:.5f} | lrm: {lrm:.2f} | dt:
  // {dt * 1000:.2f}ms | tok/sec: {tok_per_sec:,} | mfu: {mfu:.2f} | total time: {...:.2f}m`.
  auto steps = parse_text(
                   "step 00000/01000 (0.00%) | loss: 10.988312 | grad_norm: 1.23456 | lrm: 1.00 "
                   "| dt: 1234.56ms | tok/sec: 424,853 | mfu: 12.34 | total time: 0.00m\n")
                   .all<StepRecord>();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].global_step, 0);
  EXPECT_DOUBLE_EQ(*steps[0].loss, 10.988312);
  EXPECT_DOUBLE_EQ(*steps[0].grad_norm, 1.23456);
  EXPECT_DOUBLE_EQ(*steps[0].step_ms, 1234.56);
  EXPECT_DOUBLE_EQ(extra(steps[0], "total_steps"), 1000);
  EXPECT_DOUBLE_EQ(extra(steps[0], "lrm"), 1.0);
}

TEST(PlainLines, TheFirstCounterNameStaysTheCounter) {
  auto parsed = parse_text(
      "iter 0: loss 4.0\n"
      "step 5: loss 3.0\n"  // another counter: not a step of this stream
      "iter 1: loss 3.9\n");
  auto steps = parsed.all<StepRecord>();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[1].global_step, 1);
  EXPECT_EQ(parsed.stats.context_lines, 1);
}

TEST(PlainLines, LinesWithoutCounterOrLossAreContext) {
  auto parsed = parse_text(
      "Training starts at step 1, with local batch size 8, global batch size 64\n"
      "loss 2.0 without a counter\n"
      "Epoch 1: 100%| 10/10 [00:01<00:00, 9.50it/s, loss=2.31, v_num=0]\n"
      "validation loss at iteration 100 | lm loss value: 5.1 |\n"
      "eval step 3 loss 2.0\n",
      LogFormat::kPlain);
  EXPECT_EQ(parsed.stats.records, 0);
  EXPECT_EQ(parsed.stats.context_lines, 5);
}

TEST(PlainLines, MalformedNumbersOfKnownFieldsAreUnparseable) {
  auto parsed = parse_text(
      "step 1 loss 2.0\n"
      "step 2 loss 7.1.2\n"
      "step 3 loss 2.0 lr 1e-4x9\n"
      "step 4 loss 2.0 samples_per_step 2.5\n"
      "step 5 loss 2.0 mystery 1.2.3\n");  // an unknown field may be anything
  EXPECT_EQ(parsed.stats.records, 2);
  EXPECT_EQ(parsed.stats.unparseable, 3);
  ASSERT_FALSE(parsed.stats.unparseable_examples.empty());
  EXPECT_EQ(parsed.stats.unparseable_examples[0].reason, "field loss: '7.1.2' is not a number");
}

TEST(PlainLines, NonFiniteLoss) {
  StepLine line;
  std::string counter;
  std::string error;
  ASSERT_EQ(read_metric_line("step 7 loss nan lr inf", counter, line, error), LineMatch::kRecord);
  EXPECT_TRUE(std::isnan(*line.record.loss));
  EXPECT_TRUE(std::isinf(*line.record.lr));
  EXPECT_EQ(*line.counter, 7);
  EXPECT_EQ(counter, "step");
}

}  // namespace
}  // namespace bigmac::logs
