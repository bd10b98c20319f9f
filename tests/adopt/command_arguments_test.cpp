#include "adopt/command_arguments.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bigmac::adopt {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> templated(const std::vector<std::string>& argv) {
  return substitute(
      argv, recognise_arguments(argv),
      [](const RecognisedArgument& a) -> std::optional<std::string> { return placeholder_of(a); });
}

TEST(CommandArguments, TurnsTheUsualSpellingsIntoPlaceholders) {
  EXPECT_THAT(templated({"python3", "train.py", "--seed", "1", "--max-steps", "20", "--batch-size",
                         "8", "--grad-accum", "2", "--lr", "0.05"}),
              ElementsAre("python3", "train.py", "--seed", "{seed}", "--max-steps", "{max_steps}",
                          "--batch-size", "{micro_batch_size}", "--grad-accum", "{grad_accum}",
                          "--lr", "{lr}"));
  EXPECT_THAT(
      templated({"python3", "train.py", "--max_iters=100", "--log-file", "out.log", "--config",
                 "cfg.toml", "--micro_batch_size", "4"}),
      ElementsAre("python3", "train.py", "--max_iters={max_steps}", "--log-file", "{log_file}",
                  "--config", "{gate_config}", "--micro_batch_size", "{micro_batch_size}"));
  EXPECT_THAT(
      templated({"torchrun", "pretrain.py", "--train-iters", "50", "--gradient-accumulation-steps",
                 "4", "--learning-rate", "1e-4"}),
      ElementsAre("torchrun", "pretrain.py", "--train-iters", "{max_steps}",
                  "--gradient-accumulation-steps", "{grad_accum}", "--learning-rate", "{lr}"));
}

// A checkpoint or output path goes into each gate's own attempt folder, under its own name.
TEST(CommandArguments, FrameworkSpellingsAndTheLayoutTheyAreTold) {
  // Lightning's Trainer arguments as LightningCLI spells them, and the transformers and
  // accelerate examples' --max_train_steps.
  EXPECT_THAT(
      templated({"python", "main.py", "fit", "--trainer.devices=1", "--trainer.num_nodes", "1",
                 "--trainer.accumulate_grad_batches", "4", "--max_train_steps", "100"}),
      ElementsAre("python", "main.py", "fit", "--trainer.devices={nproc_per_node}",
                  "--trainer.num_nodes", "{nnodes}", "--trainer.accumulate_grad_batches",
                  "{grad_accum}", "--max_train_steps", "{max_steps}"));
  EXPECT_THAT(templated({"python", "t.py", "--devices", "auto", "--device", "cpu"}),
              ElementsAre("python", "t.py", "--devices", "{nproc_per_node}", "--device", "cpu"));
  // A device list is no count: left as written.
  EXPECT_THAT(templated({"python", "t.py", "--devices", "0,1"}),
              ElementsAre("python", "t.py", "--devices", "0,1"));
  EXPECT_EQ(setting_key(ArgumentRole::kDevices), "");
}

TEST(CommandArguments, CheckpointPathsGoIntoEachGatesAttemptFolder) {
  EXPECT_THAT(
      templated({"python3", "main.py", "--checkpoint-file", "./ckpt/checkpoint.pth.tar",
                 "--exp-dir", "exp/", "--outf", "."}),
      ElementsAre("python3", "main.py", "--checkpoint-file", "{attempt_dir}/checkpoint.pth.tar",
                  "--exp-dir", "{attempt_dir}/exp", "--outf", "{attempt_dir}"));
}

// Config-tree flags (torchtitan, Lightning CLI, hydra-style argparse): the last part names it.
TEST(CommandArguments, DottedFlagsAreRecognisedByTheirLastPart) {
  EXPECT_THAT(templated({"python3", "train.py", "--trainer.batch_size=8", "--trainer.max_iters=20",
                         "--optim.lr", "0.1", "--training.seq_len", "64"}),
              ElementsAre("python3", "train.py", "--trainer.batch_size={micro_batch_size}",
                          "--trainer.max_iters={max_steps}", "--optim.lr", "{lr}",
                          "--training.seq_len", "{seq_length}"));
  // camelCase (pytorch/examples' dcgan): --batchSize, --manualSeed.
  EXPECT_THAT(templated({"python3", "main.py", "--batchSize", "8", "--manualSeed", "1"}),
              ElementsAre("python3", "main.py", "--batchSize", "{micro_batch_size}", "--manualSeed",
                          "{seed}"));
}

TEST(CommandArguments, LeavesValuesOfTheWrongTypeAndOtherFlagsAsWritten) {
  // `--seed` followed by another flag, a non-integer step count, an unknown flag, the program.
  EXPECT_THAT(
      templated({"python3", "--seed", "--max-steps", "ten", "--hidden", "64", "--lr", "x"}),
      ElementsAre("python3", "--seed", "--max-steps", "ten", "--hidden", "64", "--lr", "x"));
  EXPECT_TRUE(recognise_arguments({"--seed", "3"}).empty());  // argv[0] is the program
}

TEST(CommandArguments, TheLastOccurrenceOfAFlagIsTheOneRecognised) {
  const auto args = recognise_arguments({"python3", "t.py", "--seed", "1", "--seed", "2"});
  ASSERT_EQ(args.size(), 1u);
  EXPECT_EQ(args[0].value, "2");
  EXPECT_EQ(args[0].value_index, 5u);
}

TEST(CommandArguments, NamesTheSettingOfEachRole) {
  EXPECT_EQ(role_of_flag("--max_iters"), ArgumentRole::kMaxSteps);
  EXPECT_EQ(role_of_flag("--MAX-STEPS"), ArgumentRole::kMaxSteps);
  EXPECT_EQ(role_of_flag("--per_device_train_batch_size"), ArgumentRole::kMicroBatchSize);
  EXPECT_EQ(role_of_flag("--seq-len"), ArgumentRole::kSeqLength);
  EXPECT_EQ(role_of_flag("--hidden"), std::nullopt);
  EXPECT_EQ(role_of_flag("-s"), std::nullopt);
  EXPECT_EQ(setting_key(ArgumentRole::kGradAccum), "train.gradient_accumulation_steps");
  EXPECT_EQ(setting_key(ArgumentRole::kLogFile), "");
}

TEST(CommandArguments, FindsBraceTokensThatWouldReadAsPlaceholders) {
  EXPECT_EQ(brace_token("print(f'step {i}')"), "{i}");
  EXPECT_EQ(brace_token("{\"a\": 1}"), std::nullopt);  // JSON is not a placeholder
  EXPECT_EQ(brace_token("{}"), std::nullopt);
  EXPECT_EQ(brace_token("--seed"), std::nullopt);
}

}  // namespace
}  // namespace bigmac::adopt
