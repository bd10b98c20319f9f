// Help that follows conventions: per-command usage under the program's own name, metavars and
// choices, each command's exit codes and examples, did-you-mean for options and gates, shell
// completion that works in a real bash, --version with the commit.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "testing/run_program.h"

namespace bigmac::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kBinary = std::string(BIGMAC_BIN_DIR) + "/bigmac-bringup";

ProgramResult tool(std::vector<std::string> args) {
  args.insert(args.begin(), kBinary);
  return run_program(args);
}

TEST(Help, EveryCommandListsItsExitCodesAndExamplesUnderTheProgramsName) {
  for (const std::vector<std::string>& command :
       std::vector<std::vector<std::string>>{{"run-all"},
                                             {"run"},
                                             {"resume"},
                                             {"status"},
                                             {"report"},
                                             {"plan"},
                                             {"config", "check"},
                                             {"config", "show"},
                                             {"baseline", "record"},
                                             {"baseline", "diff"},
                                             {"compare"},
                                             {"parse"},
                                             {"diagnose"},
                                             {"audit"},
                                             {"adopt"},
                                             {"env"},
                                             {"completion"}}) {
    std::vector<std::string> args = command;
    args.push_back("--help");
    const ProgramResult r = tool(args);
    const std::string name = command.front() + (command.size() > 1 ? " " + command[1] : "");
    EXPECT_EQ(r.exit_code, 0) << name << r.err;
    EXPECT_THAT(r.out, HasSubstr("Exit codes: 0")) << name;
    EXPECT_THAT(r.out, HasSubstr("Examples:\n  bigmac-bringup " + command.front())) << name;
    EXPECT_THAT(r.out, HasSubstr("Usage: bigmac-bringup " + name)) << name << "\n" << r.out;
    EXPECT_THAT(r.out, Not(HasSubstr(BIGMAC_BIN_DIR))) << name;
    EXPECT_THAT(r.out, Not(HasSubstr(" TEXT"))) << name << "\n" << r.out;
  }
}

TEST(Help, RunOptionsShowMetavarsAndTheirChoices) {
  const ProgramResult r = tool({"resume", "--help"});
  EXPECT_THAT(r.out, HasSubstr("-c,--config FILE"));
  EXPECT_THAT(r.out, HasSubstr("--set KEY=VALUE"));
  EXPECT_THAT(r.out, HasSubstr("--color WHEN"));
  EXPECT_THAT(r.out, HasSubstr("auto (a terminal, unless NO_COLOR is set), always, never"));
  EXPECT_THAT(r.out, HasSubstr("-q,--quiet"));
  EXPECT_THAT(r.out, Not(HasSubstr("--from"))) << "resume continues where the run stopped";
  // plan runs nothing: the output options of a run do not apply to it.
  const ProgramResult plan = tool({"plan", "--help"});
  EXPECT_THAT(plan.out, HasSubstr("--json"));
  EXPECT_THAT(plan.out, Not(HasSubstr("--strict")));
  EXPECT_THAT(plan.out, Not(HasSubstr("--color")));
}

TEST(Help, AnUnknownOptionIsNamedWithTheClosestOneOfItsCommand) {
  const ProgramResult r = tool({"run-all", "--unt", "dp"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("bigmac-bringup run-all: unknown option '--unt' (did you mean "
                               "'--until'?)"));
  EXPECT_THAT(r.err, HasSubstr("bigmac-bringup run-all --help"));
  const ProgramResult typo = tool({"status", "--jsno"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_THAT(typo.err, HasSubstr("(did you mean '--json'?)"));
}

TEST(Help, AMisspeltGateIsAnsweredWithTheClosestGate) {
  const ProgramResult r = tool({"run-all", "--until", "shpes"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--until: unknown gate 'shpes' (did you mean 'shapes'?)"));
}

TEST(Help, VersionNamesTheCommit) {
  const ProgramResult r = tool({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out,
              ::testing::MatchesRegex("bigmac-bringup [0-9.]+ \\(commit ([0-9a-f]+|unknown)\\)\n"))
      << r.out;
}

/// What bash completes for `words` (the last one is being typed), through the script the tool
/// prints, in a real bash.
std::string bash_completes(const std::string& line) {
  const std::string script =
      "source <(\"$0\" completion bash) || exit 9\n"
      "read -ra COMP_WORDS <<< \"$1\"\n"
      "[[ \"$1\" == *' ' ]] && COMP_WORDS+=('')\n"
      "COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
      "_bigmac_bringup\n"
      "echo \"${COMPREPLY[*]}\"\n";
  const ProgramResult r = run_program({"/bin/bash", "-c", script, kBinary, line});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST(Completion, BashCompletesCommandsOptionsGatesAndChoices) {
  EXPECT_EQ(bash_completes("bigmac-bringup ru"), "run-all run\n");
  EXPECT_EQ(bash_completes("bigmac-bringup run-all --unt"), "--until\n");
  EXPECT_EQ(bash_completes("bigmac-bringup run-all --until s"), "single shapes\n");
  EXPECT_EQ(bash_completes("bigmac-bringup baseline r"), "record\n");
  EXPECT_EQ(bash_completes("bigmac-bringup resume --color n"), "never\n");
  EXPECT_EQ(bash_completes("bigmac-bringup completion f"), "fish\n");
}

TEST(Completion, ZshAndFishScriptsAreProducedAndAnUnknownShellIsBadInput) {
  const ProgramResult zsh = tool({"completion", "zsh"});
  EXPECT_EQ(zsh.exit_code, 0);
  EXPECT_THAT(zsh.out, HasSubstr("bashcompinit"));
  const ProgramResult fish = tool({"completion", "fish"});
  EXPECT_EQ(fish.exit_code, 0);
  EXPECT_THAT(fish.out,
              HasSubstr("complete -c bigmac-bringup -n __fish_use_subcommand -a run-all"));
  EXPECT_THAT(fish.out, HasSubstr("-l until -r -F"));
  EXPECT_EQ(tool({"completion", "tcsh"}).exit_code, 2);
}

}  // namespace
}  // namespace bigmac::testing
