#include "core/error.h"

#include <gtest/gtest.h>

namespace bigmac {
namespace {

TEST(Error, FormatNamesFileLineColumnKeyAndHint) {
  Error e = make_error(ErrorKind::kConfig, "must be at least 1, found 0", "raise it");
  e.file = "demo.toml";
  e.line = 12;
  e.column = 3;
  e.key = "train.max_steps";
  EXPECT_EQ(e.format(), "demo.toml:12:3: train.max_steps: must be at least 1, found 0 (raise it)");
}

TEST(Error, FormatLeavesOutEmptyParts) {
  EXPECT_EQ(make_error(ErrorKind::kInput, "bad").format(), "bad");
}

TEST(Error, ExitCodesFollowTheDesign) {
  EXPECT_EQ(exit_code_for(ErrorKind::kUsage), ExitCode::kBadInput);
  EXPECT_EQ(exit_code_for(ErrorKind::kConfig), ExitCode::kBadInput);
  EXPECT_EQ(exit_code_for(ErrorKind::kInput), ExitCode::kBadInput);
  EXPECT_EQ(exit_code_for(ErrorKind::kInfrastructure), ExitCode::kInfrastructure);
  EXPECT_EQ(exit_code_for(ErrorKind::kInterrupted), ExitCode::kInterrupted);
  EXPECT_EQ(to_int(ExitCode::kInterrupted), 130);
}

TEST(Error, MostSevereOfSeveralWins) {
  Errors errors = {make_error(ErrorKind::kConfig, "a"),
                   make_error(ErrorKind::kInfrastructure, "b")};
  EXPECT_EQ(exit_code_for(errors), ExitCode::kInfrastructure);
  EXPECT_EQ(exit_code_for(Errors{}), ExitCode::kOk);
}

}  // namespace
}  // namespace bigmac
