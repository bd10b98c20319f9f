#include "trainer/train_options.h"

#include <gtest/gtest.h>

namespace bigmac::trainer {
namespace {

Expected<TrainOptions> parse(std::vector<std::string> args) { return parse_train_options(args); }

TEST(TrainOptions, ShorthandsBecomeOverridesInCommandLineOrder) {
  auto options = parse({"-c", "demo.toml", "--seed", "7", "--set", "train.lr=0.1", "--max-steps=3",
                        "--log-file", "out.jsonl"});
  ASSERT_TRUE(options);
  EXPECT_EQ(options->config_file, "demo.toml");
  EXPECT_EQ(options->overrides,
            (std::vector<std::string>{"train.seed=7", "train.lr=0.1", "train.max_steps=3"}));
  EXPECT_EQ(options->log_file, "out.jsonl");
}

TEST(TrainOptions, NothingGivenUsesDefaults) {
  auto options = parse({});
  ASSERT_TRUE(options);
  EXPECT_FALSE(options->config_file);
  EXPECT_TRUE(options->overrides.empty());
  EXPECT_TRUE(options->log_file.empty());
}

TEST(TrainOptions, UsageErrors) {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"--bogus"}, {"--seed"}, {"--set", "novalue"}, {"positional"}}) {
    auto options = parse(args);
    ASSERT_FALSE(options) << args[0];
    EXPECT_EQ(options.error().kind, ErrorKind::kUsage);
  }
  EXPECT_TRUE(parse({"--help"})->help);
  EXPECT_TRUE(parse({"--version"})->version);
  EXPECT_TRUE(parse({"--form-group"})->form_group);
  EXPECT_FALSE(parse({})->form_group);
  EXPECT_NE(train_usage().find("--log-file"), std::string::npos);
}

}  // namespace
}  // namespace bigmac::trainer
