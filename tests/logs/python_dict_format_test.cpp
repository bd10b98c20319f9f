#include <gtest/gtest.h>

#include <cmath>

#include "logs/python_dict_line.h"
#include "stream_fixture.h"

namespace bigmac::logs {
namespace {

using testing::extra;
using testing::parse_text;

// Output of a Hugging Face Trainer run under srun --label, with NCCL, tqdm and logger lines in
// between, as printed in aws-solutions-library-samples/guidance-for-protein-language-esm-model-
// training-with-sagemaker-hyperpod, esm2_models/slurm/README.md (shortened; the closing
// summary dict as the Trainer prints it, with the values of that run's all_results.json).
constexpr std::string_view kTrainerLog =
    "1: [INFO|trainer.py:2136] 2025-05-02 22:42:34,741 >>   Total optimization steps = 1,136\n"
    "0: ip-10-1-39-225:48124:48261 [0] NCCL INFO Connected binomial trees\n"
    "0: {'loss': 3.0288, 'grad_norm': 1.4424070119857788, 'learning_rate': "
    "4.929577464788733e-05, 'epoch': 0.01}\n"
    "  2%|\xe2\x96\x8f         | 18/1136 [00:08<08:31,  2.19it/s]\n"
    "0: {'loss': 2.8485, 'grad_norm': 3.385751724243164, 'learning_rate': "
    "4.8591549295774653e-05, 'epoch': 0.03}\n"
    "0: {'loss': 2.6166, 'grad_norm': 0.8394569158554077, 'learning_rate': 0.0, 'epoch': 1.0}\n"
    "0: {'train_runtime': 510.4751, 'train_samples_per_second': 195.896, "
    "'train_steps_per_second': 2.225, 'train_loss': 2.6576662063598633, 'epoch': 0.99968}\n";

TEST(PythonDict, ReadsTheTrainerLogLines) {
  auto parsed = parse_text(kTrainerLog);
  auto steps = parsed.all<StepRecord>();
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(parsed.stats.detected, LogFormat::kPythonDict);
  // No counter in the dict: the n-th step line is global_step n - 1.
  EXPECT_EQ(steps[0].global_step, 0);
  EXPECT_EQ(steps[2].global_step, 2);
  EXPECT_EQ(steps[0].at.rank, 0);
  EXPECT_DOUBLE_EQ(*steps[0].loss, 3.0288);
  EXPECT_DOUBLE_EQ(*steps[0].grad_norm, 1.4424070119857788);
  EXPECT_DOUBLE_EQ(*steps[0].lr, 4.929577464788733e-05);  // learning_rate is the lr
  EXPECT_DOUBLE_EQ(extra(steps[0], "epoch"), 0.01);
  EXPECT_DOUBLE_EQ(*steps[2].lr, 0.0);
  // Logger, NCCL and progress lines, and the run summary (its train_loss is no step), are context.
  EXPECT_EQ(parsed.stats.context_lines, 4);
  EXPECT_EQ(parsed.stats.unparseable, 0);
}

// transformers 5.17's Trainer (ProgressCallback) prints each float as f"{v:.4g}" in a string,
// after tqdm's bar on the same line when the bar shares the stream (run here: a GPT-2 from a
// config, 2 ranks, per_device_train_batch_size 4, gradient_accumulation_steps 2, --use_cpu).
constexpr std::string_view kTrainer5Log =
    "                                     {'loss': '4.704', 'grad_norm': '0.4799', "
    "'learning_rate': '0.001', 'epoch': '0.03125'}\n"
    " 33%|\xe2\x96\x88\xe2\x96\x88\xe2\x96\x8e      | 1/3 [00:00<00:00, 21.84it/s]       "
    "                                      {'loss': '4.712', 'grad_norm': '0.4828', "
    "'learning_rate': '0.0006667', 'epoch': '0.0625'}\n"
    "{'loss': 'nan', 'grad_norm': '1e-05', 'learning_rate': '3.333e-04', 'epoch': '0.09375'}\n"
    "{'train_runtime': '0.075', 'train_samples_per_second': '319.9', 'train_steps_per_second': "
    "'39.98', 'train_loss': '4.706', 'epoch': '0.04688'}\n";

TEST(PythonDict, ReadsTransformers5StringValues) {
  auto parsed = parse_text(kTrainer5Log);
  auto steps = parsed.all<StepRecord>();
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(parsed.stats.detected, LogFormat::kPythonDict);
  EXPECT_EQ(parsed.stats.unparseable, 0);
  EXPECT_DOUBLE_EQ(*steps[0].loss, 4.704);
  EXPECT_DOUBLE_EQ(*steps[1].grad_norm, 0.4828);
  EXPECT_DOUBLE_EQ(*steps[1].lr, 0.0006667);
  EXPECT_DOUBLE_EQ(extra(steps[1], "epoch"), 0.0625);
  EXPECT_TRUE(std::isnan(*steps[2].loss));
  EXPECT_DOUBLE_EQ(*steps[2].grad_norm, 1e-05);
  EXPECT_EQ(steps[2].global_step, 2);
  // A string that is no number is still no number.
  StepLine line;
  std::string error;
  EXPECT_EQ(read_python_dict_line("{'loss': '4.7 nats'}", line, error), LineMatch::kBad);
  EXPECT_EQ(error, "field loss: expected a number");
}

TEST(PythonDict, EvaluationDictsAreNotSteps) {
  auto parsed =
      parse_text("{'eval_loss': 2.628765344619751, 'eval_runtime': 88.2792, 'epoch': 0.99968}\n",
                 LogFormat::kPythonDict);
  EXPECT_EQ(parsed.stats.records, 0);
  EXPECT_EQ(parsed.stats.context_lines, 1);
}

TEST(PythonDict, NumbersInsideCallsAndOtherValues) {
  // Older Trainers printed grad_norm as a tensor; numpy 2 prints np.float64(...).
  StepLine line;
  std::string error;
  ASSERT_EQ(read_python_dict_line("{'loss': np.float64(2.5), 'grad_norm': tensor(0.75, "
                                  "device='cuda:0'), 'lr': 1e-3, 'tags': ['a', ('b', {'c': 1})], "
                                  "'name': 'it\\'s', 'done': False, 'x': None}",
                                  line, error),
            LineMatch::kRecord)
      << error;
  EXPECT_DOUBLE_EQ(*line.record.loss, 2.5);
  EXPECT_DOUBLE_EQ(*line.record.grad_norm, 0.75);
  EXPECT_DOUBLE_EQ(*line.record.lr, 1e-3);
  EXPECT_TRUE(line.record.extra.empty());  // strings, lists, booleans and None are not numbers
  EXPECT_FALSE(line.counter.has_value());
}

TEST(PythonDict, NonFiniteAndAliases) {
  StepLine line;
  std::string error;
  ASSERT_EQ(read_python_dict_line("{'train_loss': nan, 'total_norm': inf, 'learning_rate': 0.1}",
                                  line, error),
            LineMatch::kRecord);
  EXPECT_TRUE(std::isnan(*line.record.loss));
  EXPECT_TRUE(std::isinf(*line.record.grad_norm));
  ASSERT_EQ(read_python_dict_line("{'lm loss': 1.0, 'gradient_norm': 2.0}", line, error),
            LineMatch::kRecord);
  EXPECT_DOUBLE_EQ(*line.record.loss, 1.0);
  EXPECT_DOUBLE_EQ(*line.record.grad_norm, 2.0);
}

TEST(PythonDict, ACounterKeyIsNumberedByTheStreamRule) {
  // The Hugging Face global_step counts finished steps from 1: the first counter says so.
  auto steps = parse_text("{'global_step': 1, 'loss': 2.0}\n{'global_step': 2, 'loss': 1.9}\n")
                   .all<StepRecord>();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].global_step, 0);
  EXPECT_EQ(steps[1].global_step, 1);
  // A counter that starts at 0 is kept.
  steps = parse_text("{'step': 0, 'loss': 2.0}\n{'step': 1, 'loss': 1.9}\n").all<StepRecord>();
  EXPECT_EQ(steps[1].global_step, 1);
}

TEST(PythonDict, FlatJsonWithoutAnEventReadsToo) {
  auto parsed = parse_text("{\"step\": 0, \"loss\": 1.5, \"lr\": 0.01}\n");
  auto steps = parsed.all<StepRecord>();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(parsed.stats.detected, LogFormat::kPythonDict);
  EXPECT_DOUBLE_EQ(*steps[0].lr, 0.01);
}

TEST(PythonDict, BadValuesOfKnownFieldsAreUnparseable) {
  auto parsed = parse_text(
      "{'loss': 2.0}\n"
      "{'loss': 'high', 'epoch': 1}\n"       // a loss that is no number
      "{'loss': 2.0, 'grad_norm': [1, 2}\n"  // a dict with a loss that does not parse
      "{'loss': 1.0, 'step': 2.5}\n"         // a counter that is no step number
      "{'epoch': 1, 'oops' 2}\n");           // no loss: not a step line, context
  EXPECT_EQ(parsed.stats.records, 1);
  EXPECT_EQ(parsed.stats.unparseable, 3);
  EXPECT_EQ(parsed.stats.context_lines, 1);
  ASSERT_FALSE(parsed.stats.unparseable_examples.empty());
  EXPECT_EQ(parsed.stats.unparseable_examples[0].reason, "field loss: expected a number");
}

TEST(PythonDict, WhatIsNotADictIsNotMine) {
  StepLine line;
  std::string error;
  for (std::string_view text :
       {"", "{}", "loss: 2", "{'loss': 2} trailing", "{1: 2}", "{'a': {'b': 1}}", "set {'loss'}"}) {
    EXPECT_EQ(read_python_dict_line(text, line, error), LineMatch::kNotMine) << text;
  }
}

}  // namespace
}  // namespace bigmac::logs
