#include "adopt/config_draft.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config/config.h"

namespace bigmac::adopt {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ConfigDraft, TomlStringsAreLiteralWhenTheyCanBe) {
  EXPECT_EQ(toml_string("{seed}"), "'{seed}'");
  EXPECT_EQ(toml_string("\\s+(\\d+)"), "'\\s+(\\d+)'");
  EXPECT_EQ(toml_string("it's"), "\"it's\"");
  EXPECT_EQ(toml_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
  // Control characters have no place in a literal string: escaped in a basic one.
  EXPECT_EQ(toml_string("bell\x07"), "\"bell\\u0007\"");
  EXPECT_EQ(shown_word("--seed"), "--seed");
  EXPECT_EQ(shown_word("import sys\nprint(1)"), "\"import sys\\nprint(1)\"");
  EXPECT_EQ(shown_word("a b"), "'a b'");
}

// The text adopt writes loads as a configuration with the values, the template and the
// `[logs.fields]` map it drafted, each flag's value as the setting of its placeholder.
TEST(ConfigDraft, TheWrittenTextLoadsWithWhatWasDrafted) {
  DraftInputs in;
  in.original = {"/usr/bin/python3", "t.py", "--seed", "7", "--max_iters", "30", "--lr", "1e-3"};
  in.arguments = recognise_arguments(in.original);
  in.command = substitute(
      in.original, in.arguments,
      [](const RecognisedArgument& a) -> std::optional<std::string> { return placeholder_of(a); });
  in.log_format = "regex";
  in.log_format_comment = "proposed";
  FieldProposal fields;
  fields.fields = {{"step", "(?:^|[^A-Za-z0-9_])it\\s*[:=]?\\s*([0-9]+)"},
                   {"loss", "loss ([0-9.]+)"}};
  fields.unmapped = {{"bsz", "bsz ([0-9]+)"}};
  fields.example = "it 1 | loss 0.5 | bsz 8";
  in.fields = fields;
  in.longest_silence_s = 4.2;
  const std::string text = draft_text(draft_config(in));
  EXPECT_THAT(text, HasSubstr("#   /usr/bin/python3 t.py --seed 7 --max_iters 30 --lr 1e-3"));
  // The flag's 30 was the program's full run: a gate runs its own 20 steps.
  EXPECT_THAT(text, HasSubstr("(--max_iters 30 -> {max_steps}; the probe ends every gate there)"));
  EXPECT_THAT(text, HasSubstr("`step` counts from 1"));
  EXPECT_THAT(text, HasSubstr("# samples_per_step = 'bsz ([0-9]+)'"));

  const fs::path file =
      fs::temp_directory_path() / ("adopt-draft-" + std::to_string(::getpid()) + ".toml");
  std::ofstream(file) << text;
  config::ConfigSources sources;
  sources.file = file.string();
  auto loaded = config::load_config(sources);
  fs::remove(file);
  ASSERT_TRUE(loaded.has_value()) << loaded.error().front().format() << "\n" << text;
  EXPECT_EQ(loaded->train.seed, 7);
  EXPECT_EQ(loaded->train.max_steps, 20);
  EXPECT_DOUBLE_EQ(loaded->train.lr, 1e-3);
  EXPECT_EQ(loaded->launch.stall_min_s, 13);  // three times the trial's quiet spell, rounded up
  EXPECT_THAT(loaded->trainer.command, ElementsAre("/usr/bin/python3", "t.py", "--seed", "{seed}",
                                                   "--max_iters", "{max_steps}", "--lr", "{lr}"));
  EXPECT_EQ(loaded->trainer.log_format, "regex");
  EXPECT_EQ(loaded->log_fields.at("loss"), "loss ([0-9.]+)");
  EXPECT_EQ(loaded->log_fields.count("samples_per_step"), 0u);  // only suggested
}

// A command word over two lines (`python3 -c` with a script) stays one line of the header.
TEST(ConfigDraft, ACommandWordWithANewlineKeepsTheFileLoadable) {
  DraftInputs in;
  in.original = {"/usr/bin/python3", "-c", "print('loss 1')\nprint('loss 2')"};
  in.command = in.original;
  in.log_format = "plain";
  const std::string text = draft_text(draft_config(in));
  const fs::path file =
      fs::temp_directory_path() / ("adopt-draft-nl-" + std::to_string(::getpid()) + ".toml");
  std::ofstream(file) << text;
  config::ConfigSources sources;
  sources.file = file.string();
  auto loaded = config::load_config(sources);
  fs::remove(file);
  ASSERT_TRUE(loaded.has_value()) << loaded.error().front().format() << "\n" << text;
  EXPECT_EQ(loaded->trainer.command, in.original);
}

}  // namespace
}  // namespace bigmac::adopt
