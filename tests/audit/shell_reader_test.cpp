#include "audit/shell_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bigmac::audit {
namespace {

/// "setting kind line value note" of every place, for exact comparison.
std::vector<std::string> summary(const ProjectFacts& facts) {
  std::vector<std::string> out;
  for (const Place& p : facts.places) {
    std::string kind = p.kind == PlaceKind::kWrite  ? "write"
                       : p.kind == PlaceKind::kRead ? "read"
                                                    : "derived";
    out.push_back(std::string(info(p.setting).name) + " " + kind + " " + std::to_string(p.line) +
                  (p.value ? " " + p.value->text : "") + (p.note.empty() ? "" : " | " + p.note));
  }
  return out;
}

TEST(ShellReader, TorchrunFlagsVariablesAndProgramArguments) {
  ProjectFacts facts;
  read_shell_script(
      "NPROC=4\n"
      "export MASTER_PORT=29500\n"
      "PP=${PP:-2}\n"
      "torchrun --nproc_per_node=$NPROC --nnodes \"${NNODES:-1}\" --standalone \\\n"
      "  train.py --config configs/a.yaml --pp \"$PP\" --micro-batch-size 8 --seq-len $SEQ\n",
      "launch.sh", facts);
  EXPECT_THAT(
      summary(facts),
      ::testing::ElementsAre("nproc_per_node write 1 4", "master_port write 2 29500",
                             "pp_size write 3 2 | unless $PP is already set in the environment",
                             "nproc_per_node read 4 | passes $NPROC on",
                             "nnodes write 4 1 | ${NNODES:-...} fallback",
                             "nnodes write 4 1 | torchrun --standalone runs on one node",
                             "pp_size read 5 | passes $PP on", "micro_batch_size write 5 8",
                             "seq_length read 5 | passes $SEQ on"));
  for (const Place& p : facts.places) EXPECT_EQ(p.layer, config::Layer::kLaunch);
  ASSERT_EQ(facts.references.size(), 2u);
  EXPECT_EQ(facts.references[0].text, "train.py");
  EXPECT_TRUE(facts.references[0].launches);
  EXPECT_EQ(facts.references[1].text, "configs/a.yaml");
}

TEST(ShellReader, SbatchDirectivesAndSrunShortFlags) {
  ProjectFacts facts;
  read_shell_script(
      "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gres=gpu:8\n"
      "srun -N 2 --gpus-per-node 8 python -u -m trainer.main --num-layers 24\n",
      "job.sbatch", facts);
  EXPECT_THAT(summary(facts),
              ::testing::ElementsAre("nnodes write 2 2", "devices write 3 8", "nnodes write 4 2",
                                     "nproc_per_node write 4 8", "num_layers write 4 24"));
  EXPECT_EQ(facts.places[0].source, Source::kDirective);
  EXPECT_EQ(facts.places[2].source, Source::kScript);
  ASSERT_EQ(facts.references.size(), 1u);
  EXPECT_TRUE(facts.references[0].module);
  EXPECT_EQ(facts.references[0].text, "trainer.main");
}

TEST(ShellReader, ArraysAndSplitStringsKeepEachFlagsLine) {
  ProjectFacts facts;
  read_shell_script(
      "GPT_ARGS=\"\n  --num-layers 24 \\\n  --global-batch-size 64\n\"\n"
      "DIST=(\n  --nnodes 2\n)\n"
      "torchrun \"${DIST[@]}\" pretrain.py $GPT_ARGS\n",
      "run.sh", facts);
  EXPECT_THAT(summary(facts), ::testing::ElementsAre("nnodes write 6 2", "num_layers write 2 24",
                                                     "global_batch write 3 64"));
}

TEST(ShellReader, CommandPrefixAssignmentsAreTheCommandsEnvironment) {
  ProjectFacts facts;
  read_shell_script("WORLD_SIZE=8 python train.py\necho $WORLD_SIZE\n", "run.sh", facts);
  ASSERT_EQ(facts.places.size(), 1u);
  EXPECT_EQ(facts.places[0].source, Source::kEnvironment);
  EXPECT_EQ(facts.places[0].value->text, "8");
}

}  // namespace
}  // namespace bigmac::audit
