#include "audit/shell_lexer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bigmac::audit {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> texts(const ShellCommand& c) {
  std::vector<std::string> out;
  for (const ShellWord& w : c.words) {
    std::string t;
    for (const WordPart& p : w.parts) {
      t += p.kind == WordPart::Kind::kVariable ? "{" + p.text + "}" : p.text;
    }
    out.push_back(t);
  }
  return out;
}

TEST(ShellLexer, QuotesEscapesAndContinuationsMakeOneCommand) {
  const auto script = lex_shell(
      "torchrun --nnodes 1 \\\n  --nproc_per_node \"$N\" \\\n  train.py 'a b' \"c \\\"d\\\"\" e\\ "
      "f\n");
  ASSERT_EQ(script.commands.size(), 1u);
  EXPECT_THAT(texts(script.commands[0]),
              ElementsAre("torchrun", "--nnodes", "1", "--nproc_per_node", "{N}", "train.py", "a b",
                          "c \"d\"", "e f"));
  EXPECT_EQ(script.commands[0].words[3].line, 2);
  EXPECT_EQ(script.commands[0].words[5].line, 3);
}

TEST(ShellLexer, SeparatorsCommentsAndRedirections) {
  const auto script = lex_shell("a 1; b 2 && c 3 # not a word\nd > out.log 2>&1 | tee x\n");
  ASSERT_EQ(script.commands.size(), 5u);
  EXPECT_THAT(texts(script.commands[0]), ElementsAre("a", "1"));
  EXPECT_THAT(texts(script.commands[2]), ElementsAre("c", "3"));
  EXPECT_THAT(texts(script.commands[3]), ElementsAre("d"));
  EXPECT_THAT(texts(script.commands[4]), ElementsAre("tee", "x"));
}

TEST(ShellLexer, ParameterExpansionForms) {
  const auto script = lex_shell("x ${A:-\"4\"} ${B-7} ${C[@]} ${#D} $(hostname) `date` $1\n");
  const auto& w = script.commands[0].words;
  ASSERT_EQ(w.size(), 8u);
  EXPECT_TRUE(w[1].parts[0].has_fallback);
  EXPECT_EQ(w[1].parts[0].fallback, "4");
  EXPECT_EQ(w[2].parts[0].fallback, "7");
  EXPECT_TRUE(w[3].parts[0].all_elements);
  EXPECT_EQ(w[4].parts[0].kind, WordPart::Kind::kOpaque);
  EXPECT_EQ(w[5].parts[0].kind, WordPart::Kind::kOpaque);
  EXPECT_EQ(w[6].parts[0].kind, WordPart::Kind::kOpaque);
  EXPECT_EQ(w[7].parts[0].text, "1");
}

TEST(ShellLexer, ArraysKeepTheLineOfEachElement) {
  const auto script = lex_shell("ARGS=(\n  --pp 4  # stages\n  --tp 2\n)\ncmd \"${ARGS[@]}\"\n");
  ASSERT_EQ(script.commands.size(), 2u);
  const ShellWord& array = script.commands[0].words[0];
  ASSERT_TRUE(array.is_array);
  ASSERT_EQ(array.elements.size(), 4u);
  EXPECT_EQ(array.elements[1].literal_text(), "4");
  EXPECT_EQ(array.elements[1].line, 2);
  EXPECT_EQ(array.elements[3].line, 3);
}

TEST(ShellLexer, AnEmptyWordBeforeAParenthesisIsNoArray) {
  // Found by the fuzzer: `""(` looked at the last character of an empty word.
  const auto script = lex_shell("cmd \"\"(a)\nX=(b)\n");
  ASSERT_EQ(script.commands.size(), 3u);
  EXPECT_THAT(texts(script.commands[1]), ElementsAre("a"));
  for (const ShellWord& w : script.commands[0].words) EXPECT_FALSE(w.is_array);
  EXPECT_TRUE(script.commands[2].words[0].is_array);
}

TEST(ShellLexer, HereDocumentBodiesAreNotCommands) {
  const auto script = lex_shell("cat <<-EOF > x\n\t--pp 9\n\tEOF\nnext 1\n");
  ASSERT_EQ(script.commands.size(), 2u);
  EXPECT_THAT(texts(script.commands[0]), ElementsAre("cat"));
  EXPECT_THAT(texts(script.commands[1]), ElementsAre("next", "1"));
}

TEST(ShellLexer, SbatchDirectivesOnlyBeforeTheFirstCommand) {
  const auto script = lex_shell(
      "#!/bin/bash\n#SBATCH --nodes=2\n# note\n#SBATCH -N 3\nsrun x\n#SBATCH --nodes=9\n");
  ASSERT_EQ(script.directives.size(), 2u);
  EXPECT_EQ(script.directives[0].line, 2);
  EXPECT_EQ(script.directives[0].text, " --nodes=2");
  EXPECT_EQ(script.directives[1].line, 4);
}

TEST(ShellLexer, UnterminatedInputNeverFails) {
  for (const char* text : {"a \"b", "a 'b", "a ${b", "a $(b", "X=(a b", "a \\", "a `b"}) {
    const auto script = lex_shell(text);
    EXPECT_LE(script.commands.size(), 1u) << text;
  }
}

}  // namespace
}  // namespace bigmac::audit
