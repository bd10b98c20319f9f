#include "adopt/parser_record.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace bigmac::adopt {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;

// What bigmac_probe/argparse_record.py writes for a parser (the fields adopt reads).
constexpr const char* kActions = R"([
  {"dest": "help", "options": ["-h", "--help"], "nargs": 0, "takes_value": false, "store": false, "type": null, "default": "==SUPPRESS=="},
  {"dest": "total_epochs", "options": [], "nargs": null, "takes_value": false, "store": true, "type": "int", "default": null},
  {"dest": "save_every", "options": [], "nargs": null, "takes_value": false, "store": true, "type": "int", "default": null},
  {"dest": "batch_size", "options": ["-b", "--batch_size"], "nargs": null, "takes_value": true, "store": true, "type": "int", "default": 32},
  {"dest": "lr", "options": ["--lr"], "nargs": null, "takes_value": true, "store": true, "type": "float", "default": 0.125},
  {"dest": "verbose", "options": ["--verbose"], "nargs": 0, "takes_value": false, "store": false, "type": null, "default": false},
  {"dest": "seed", "options": ["--seed"], "nargs": null, "takes_value": true, "store": true, "type": "int", "default": null}
])";

class ParserRecordTest : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() / ("bigmac-parser-" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }

  ParserRecord record(const std::string& argv_json, const std::string& actions = kActions) {
    const fs::path path = dir / "argparse.json";
    std::ofstream(path) << R"({"argv": )" << argv_json << R"(, "actions": )" << actions << "}";
    auto read = read_parser_record(path);
    EXPECT_TRUE(read.has_value());
    return read.value_or(ParserRecord{});
  }
};

TEST_F(ParserRecordTest, AddsADefaultTheCommandLeavesOutSoTheGatesCanSetIt) {
  std::vector<std::string> command{"/usr/bin/python3", "multigpu.py", "50", "10", "--verbose"};
  std::vector<RecognisedArgument> args;
  recognise_with_parser(record(R"(["multigpu.py", "50", "10", "--verbose"])"), command, args);
  EXPECT_THAT(command, ElementsAre("/usr/bin/python3", "multigpu.py", "50", "10", "--verbose",
                                   "--batch_size", "32", "--lr", "0.125"));
  ASSERT_EQ(args.size(), 2u);
  EXPECT_EQ(args[0].role, ArgumentRole::kMicroBatchSize);
  EXPECT_EQ(args[0].value_index, 6u);
  EXPECT_EQ(args[0].found_by, FoundBy::kDefault);
  EXPECT_EQ(shown_argument(args[0]),
            "--batch_size 32 (its argparse default, added to the command)");
  EXPECT_EQ(args[1].role, ArgumentRole::kLr);
}

TEST_F(ParserRecordTest, ReadsAShortSpellingByItsDestAndAddsNothingGivenAlready) {
  std::vector<std::string> command{"python3", "t.py", "-b", "16", "5", "2", "--lr=0.5"};
  std::vector<RecognisedArgument> args = recognise_arguments(command);  // --lr by its spelling
  ASSERT_EQ(args.size(), 1u);
  recognise_with_parser(record(R"(["t.py", "-b", "16", "5", "2", "--lr=0.5"])"), command, args);
  EXPECT_EQ(command.size(), 7u);
  ASSERT_EQ(args.size(), 2u);
  EXPECT_EQ(args[0].flag, "-b");
  EXPECT_EQ(args[0].value, "16");
  EXPECT_EQ(args[0].value_index, 3u);
  EXPECT_EQ(args[1].role, ArgumentRole::kLr);
}

TEST_F(ParserRecordTest, RecognisesAPositionalByItsDest) {
  const std::string actions = R"([
    {"dest": "data", "options": [], "nargs": null, "takes_value": false, "store": true, "type": null, "default": null},
    {"dest": "batch_size", "options": [], "nargs": null, "takes_value": false, "store": true, "type": "int", "default": null},
    {"dest": "steps", "options": ["--steps"], "nargs": null, "takes_value": true, "store": true, "type": "int", "default": 3}
  ])";
  std::vector<std::string> command{"python3", "-m", "pkg.train", "--steps", "9", "data/", "64"};
  std::vector<RecognisedArgument> args;
  recognise_with_parser(record(R"(["/src/pkg/train.py", "--steps", "9", "data/", "64"])", actions),
                        command, args);
  ASSERT_EQ(args.size(), 1u);  // --steps is no number a gate hands over this way
  EXPECT_EQ(args[0].role, ArgumentRole::kMicroBatchSize);
  EXPECT_EQ(args[0].value_index, 6u);
  EXPECT_EQ(shown_argument(args[0]), "batch_size 64 (positional)");
}

TEST_F(ParserRecordTest, AnAbbreviatedFlagIsTakenAsGivenAndStopsThePositionalWalk) {
  std::vector<std::string> command{"python3", "t.py", "--batch", "16", "5", "2"};
  std::vector<RecognisedArgument> args;
  recognise_with_parser(record(R"(["t.py", "--batch", "16", "5", "2"])"), command, args);
  // --batch_size is not added after the user's `--batch 16` (argparse would keep the last).
  EXPECT_THAT(command, ElementsAre("python3", "t.py", "--batch", "16", "5", "2", "--lr", "0.125"));
  ASSERT_EQ(args.size(), 1u);
  EXPECT_EQ(args[0].role, ArgumentRole::kLr);
}

TEST_F(ParserRecordTest, ACommandWhoseTailIsNotTheProgramsArgvIsLeftAlone) {
  std::vector<std::string> command{"bash", "run.sh"};
  std::vector<RecognisedArgument> args;
  recognise_with_parser(record(R"(["t.py", "5", "2"])"), command, args);
  EXPECT_THAT(command, ElementsAre("bash", "run.sh"));
  EXPECT_TRUE(args.empty());
}

TEST_F(ParserRecordTest, NoFileOrABrokenOneIsNoRecord) {
  EXPECT_FALSE(read_parser_record(dir / "absent.json").has_value());
  std::ofstream(dir / "broken.json") << R"({"argv": [1, 2)";
  EXPECT_FALSE(read_parser_record(dir / "broken.json").has_value());
}

}  // namespace
}  // namespace bigmac::adopt
