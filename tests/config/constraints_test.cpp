#include "config/constraints.h"

#include "config_fixture.h"

namespace bigmac::config {
namespace {

using ::testing::HasSubstr;

// D2: an integer past what its member holds wrapped ("micro -2147483648 … global batch 0",
// nproc_per_node 4294967300 became 4, max_steps 4294967296 reached the trainer as 0).
TEST_F(ConfigTest, IntegersAreRangeCheckedBeforeTheyAreNarrowed) {
  const std::pair<const char*, const char*> cases[] = {
      {"[train]\nmicro_batch_size = 2147483648\n",
       "train.micro_batch_size: must be at most 2147483647, found 2147483648"},
      {"[launch]\nnproc_per_node = 4294967300\n",
       "launch.nproc_per_node: must be at most 4096, found 4294967300"},
      {"[train]\nmax_steps = 4294967296\n",
       "train.max_steps: must be at most 2147483647, found 4294967296"},
      {"[faults]\nworld_size_offset = 2147483648\n", "faults.world_size_offset: must be at most"},
      {"[parallel]\npp_size = 2\n[model]\nsplit_points = [4294967298]\n",
       "split point 4294967298 is out of range"},
      {"[train]\nmicro_batch_size = 65536\ngradient_accumulation_steps = 65536\n",
       "the global batch micro_batch_size 65536 × gradient_accumulation_steps 65536 × dp 4 is "
       "more than 2147483647 samples per step"},
  };
  for (const auto& [toml, message] : cases) {
    Errors errors = load_errors(toml);
    ASSERT_FALSE(errors.empty()) << toml;
    EXPECT_THAT(join(errors), HasSubstr(message)) << toml;
  }
  EXPECT_THAT(join(load_errors("", {"train.seed=99999999999999999999"})),
              HasSubstr("train.seed: expected an integer"));
  // More stages than layers is refused, not expanded into half a billion split points.
  EXPECT_THAT(join(load_errors("[parallel]\npp_size = 536870912\n")),
              HasSubstr("num_layers 4 is less than pp_size 536870912"));
  EXPECT_EQ(load_ok("[train]\nseed = 9223372036854775807\n").train.seed, INT64_MAX);
}

// D14: a timeout of 0 s stops every gate at once; issue 30 item 12: so does one of 1e-9 s, and
// every time limit has a floor of 1 s.
TEST_F(ConfigTest, TimeLimitsHaveAFloorOfOneSecond) {
  EXPECT_THAT(join(load_errors("[launch]\ninit_timeout_s = 0\n")),
              HasSubstr("launch.init_timeout_s: must be at least 1 s, found 0"));
  EXPECT_THAT(join(load_errors("", {"launch.stall_timeout_s=0.0"})),
              HasSubstr("launch.stall_timeout_s: must be at least 1 s"));
  EXPECT_THAT(join(load_errors("", {"launch.init_timeout_s=1e-9"})),
              HasSubstr("launch.init_timeout_s: must be at least 1 s, found 1e-09"));
  EXPECT_THAT(join(load_errors("[launch]\nstall_min_s = 0.5\n")),
              HasSubstr("launch.stall_min_s: must be at least 1 s, found 0.5"));
  EXPECT_EQ(load_ok("[launch]\ninit_timeout_s = 1.5\n").launch.init_timeout_s, 1.5);
}

// Issue 30 item 12: one value per --set, and no string a rank cannot be handed.
TEST_F(ConfigTest, SetTakesOneValueAndStringsAreText) {
  EXPECT_THAT(join(load_errors("", {"train.seed=1\ntrain.max_steps=3"})),
              HasSubstr("--set holds a line break"));
  EXPECT_THAT(join(load_errors("", {"train.seed=1 # comment"})),
              HasSubstr("train.seed: expected an integer and nothing after it"));
  EXPECT_EQ(load_ok("", {"train.seed=7  "}).train.seed, 7);
  EXPECT_THAT(join(load_errors("[launch]\nmaster_addr = \"a\\u0000b\"\n")),
              HasSubstr("launch.master_addr: expected UTF-8 text, found a NUL byte at offset 1"));
  EXPECT_THAT(join(load_errors("", {"launch.master_addr=\xff"})),
              HasSubstr("found byte 0xff (not UTF-8) at offset 0"));
  EXPECT_THAT(join(load_errors("", {"trainer.env.NAME=\xc3"})),
              HasSubstr("trainer.env.NAME: expected UTF-8 text"));
}

TEST_F(ConfigTest, WorldSizeNotDivisiblePrintsTheNumbers) {
  Errors errors = load_errors("[launch]\nnproc_per_node = 4\n[parallel]\npp_size = 3\n");
  ASSERT_EQ(errors.size(), 1u) << join(errors);
  EXPECT_THAT(errors[0].message,
              HasSubstr("world_size 4 is not divisible by pp_size 3 × tp_size 1"));
  EXPECT_EQ(errors[0].line, 4);  // points at pp_size, where the file set it
}

TEST_F(ConfigTest, DerivesDpGlobalBatchAndAutoSplits) {
  Config c = load_ok(
      "[launch]\nnnodes = 2\nnproc_per_node = 4\n[parallel]\npp_size = 2\n"
      "[train]\nmicro_batch_size = 2\ngradient_accumulation_steps = 3\n[model]\nnum_layers = 8\n");
  EXPECT_EQ(c.derived.world_size, 8);
  EXPECT_EQ(c.derived.dp, 4);
  EXPECT_EQ(c.derived.global_batch, 2 * 3 * 4);
  EXPECT_EQ(c.derived.micro_batches, 3);
  EXPECT_EQ(c.model.split_points, std::vector<int>{4});
  const Setting* dp = c.settings.find("derived.dp");
  ASSERT_NE(dp, nullptr);
  EXPECT_EQ(dp->origin.kind, SourceKind::kDerived);
  EXPECT_THAT(dp->origin.describe(), HasSubstr("8 / (2 × 1)"));
}

TEST_F(ConfigTest, AutoSplitsFollowTheFormula) {
  Config c = load_ok(
      "[launch]\nnproc_per_node = 3\n[parallel]\npp_size = 3\n[model]\n"
      "num_layers = 7\n");
  EXPECT_EQ(c.model.split_points, (std::vector<int>{7 * 1 / 3, 7 * 2 / 3}));
}

TEST_F(ConfigTest, TooFewLayersForTheStages) {
  Errors errors = load_errors(
      "[launch]\nnproc_per_node = 4\n[parallel]\npp_size = 4\n"
      "[model]\nnum_layers = 2\n");
  EXPECT_THAT(join(errors), HasSubstr("num_layers 2 is less than pp_size 4"));
}

TEST_F(ConfigTest, SplitPointRules) {
  const std::string head =
      "[launch]\nnproc_per_node = 3\n[parallel]\npp_size = 3\n[model]\n"
      "num_layers = 6\n";
  EXPECT_THAT(join(load_errors(head + "split_points = [2]\n")),
              HasSubstr("1 split points given; pp_size 3 needs exactly 2"));
  EXPECT_THAT(join(load_errors(head + "split_points = [4, 2]\n")),
              HasSubstr("must increase strictly, found 2 after 4"));
  EXPECT_THAT(join(load_errors(head + "split_points = [0, 3]\n")),
              HasSubstr("split point 0 is outside (0, num_layers 6)"));
  EXPECT_THAT(join(load_errors(head + "split_points = [3, 6]\n")),
              HasSubstr("split point 6 is outside (0, num_layers 6)"));
  EXPECT_THAT(join(load_errors(head + "split_points = \"even\"\n")),
              HasSubstr("expected \"auto\" or an array of integers"));
}

TEST_F(ConfigTest, EveryViolationIsReportedAtOnce) {
  Errors errors = load_errors(
      "[launch]\nnproc_per_node = 4\nbackend = \"nccl\"\n[parallel]\npp_size = 3\n"
      "micro_batches = 5\n[model]\nhidden = 60\nheads = 7\n[train]\nmax_steps = 0\n");
  const std::string all = join(errors);
  EXPECT_THAT(all, HasSubstr("not divisible by pp_size 3"));
  EXPECT_THAT(all, HasSubstr("backend nccl needs GPUs"));
  EXPECT_THAT(all, HasSubstr("micro_batches 5 differs from gradient_accumulation_steps 4"));
  EXPECT_THAT(all, HasSubstr("hidden 60 is not divisible by heads 7"));
  EXPECT_THAT(all, HasSubstr("max_steps: must be at least 1"));
  EXPECT_EQ(errors.size(), 5u) << all;
}

TEST_F(ConfigTest, CommandTrainerNeedsACommand) {
  EXPECT_THAT(join(load_errors("[trainer]\nkind = \"command\"\n")),
              HasSubstr("trainer.command is empty"));
}

TEST_F(ConfigTest, FaultArgumentsAreChecked) {
  EXPECT_THAT(join(load_errors("[faults]\ncrash_rank = \"1\"\n")),
              HasSubstr("expected \"A:B\" (two integers), found \"1\""));
  Config c = load_ok("[faults]\ncrash_rank = \"1:5\"\nhang_rank = \"0:-1\"\n");
  EXPECT_EQ(parse_rank_pair(c.faults.crash_rank), (std::pair{1, 5}));
  EXPECT_EQ(parse_rank_pair(c.faults.hang_rank), (std::pair{0, -1}));
}

}  // namespace
}  // namespace bigmac::config
