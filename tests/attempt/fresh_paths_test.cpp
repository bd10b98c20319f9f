#include "attempt/fresh_paths.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "attempt/earlier_checkpoints.h"

namespace bigmac::attempt {
namespace {
namespace fs = std::filesystem;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

class FreshPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    here_ = fs::temp_directory_path() / fmt::format("bigmac-fresh-{}-{}", ::getpid(), info->name());
    fs::remove_all(here_);
    run_ = here_ / "runs" / "r1";
    attempt_ = run_ / "01-single.1";
    fs::create_directories(attempt_);
  }
  void TearDown() override { fs::remove_all(here_); }
  fs::path here_, run_, attempt_;
};

TEST_F(FreshPaths, TheUsersFileGoesAsideAndComesBackWhatTheGateWroteStaysWithTheAttempt) {
  write(here_ / "snapshot.pt", "user's");
  auto aside = set_aside({"snapshot.pt"}, here_, run_, attempt_);
  ASSERT_TRUE(aside) << aside.error().format();
  EXPECT_FALSE(fs::exists(here_ / "snapshot.pt"));  // the gate starts fresh
  EXPECT_TRUE(fs::exists(run_ / kSetAsideManifest));
  ASSERT_EQ(aside->entries.size(), 1u);
  EXPECT_EQ(read(aside->entries[0].kept), "user's");

  write(here_ / "snapshot.pt", "gate's");
  auto back = put_back(*aside);
  ASSERT_TRUE(back) << back.error().format();
  EXPECT_EQ(read(here_ / "snapshot.pt"), "user's");
  EXPECT_EQ(read(attempt_ / "wrote" / "0-snapshot.pt"), "gate's");
  EXPECT_FALSE(fs::exists(run_ / kSetAsideManifest));
  ASSERT_EQ(back->size(), 2u);
  EXPECT_NE((*back)[0].find("kept as 01-single.1/wrote/0-snapshot.pt"), std::string::npos)
      << (*back)[0];
}

TEST_F(FreshPaths, AFileTheGateCreatedIsKeptWithTheAttemptAndThePathIsFreeAgain) {
  auto aside = set_aside({"ckpt/model.pt", "missing.pt"}, here_, run_, attempt_);
  ASSERT_TRUE(aside);
  write(here_ / "ckpt" / "model.pt", "gate's");
  ASSERT_TRUE(put_back(*aside));
  EXPECT_FALSE(fs::exists(here_ / "ckpt" / "model.pt"));
  EXPECT_EQ(read(attempt_ / "wrote" / "0-model.pt"), "gate's");
}

TEST_F(FreshPaths, AFolderMovesAsAWhole) {
  write(here_ / "exp" / "model.pth", "user's");
  auto aside = set_aside({"exp"}, here_, run_, attempt_);
  ASSERT_TRUE(aside);
  EXPECT_FALSE(fs::exists(here_ / "exp"));
  write(here_ / "exp" / "model.pth", "gate's");
  ASSERT_TRUE(put_back(*aside));
  EXPECT_EQ(read(here_ / "exp" / "model.pth"), "user's");
  EXPECT_EQ(read(attempt_ / "wrote" / "0-exp" / "model.pth"), "gate's");
}

TEST_F(FreshPaths, TheWorkingDirectoryAndTheRunFolderAreRefusedBeforeAnythingMoves) {
  write(here_ / "snapshot.pt", "user's");
  for (const std::string& bad :
       std::vector<std::string>{"", ".", "..", "/", "runs", "runs/r1/x", here_.string()}) {
    auto aside = set_aside({"snapshot.pt", bad}, here_, run_, attempt_);
    ASSERT_FALSE(aside) << bad;
    EXPECT_EQ(aside.error().kind, ErrorKind::kConfig);
    EXPECT_EQ(aside.error().key, "trainer.fresh_paths");
    EXPECT_NE(aside.error().message.find("entry 2"), std::string::npos) << aside.error().message;
  }
  EXPECT_EQ(read(here_ / "snapshot.pt"), "user's");
  EXPECT_FALSE(fs::exists(run_ / kSetAsideManifest));
}

TEST_F(FreshPaths, ARunKilledWithFilesAsideGetsThemBackAtItsNextAttempt) {
  write(here_ / "snapshot.pt", "user's");
  ASSERT_TRUE(set_aside({"snapshot.pt"}, here_, run_, attempt_));
  write(here_ / "snapshot.pt", "gate's");  // killed here: no put_back
  auto lines = recover_set_aside(run_);
  ASSERT_TRUE(lines) << lines.error().format();
  EXPECT_EQ(lines->size(), 2u);
  EXPECT_EQ(read(here_ / "snapshot.pt"), "user's");
  EXPECT_EQ(read(attempt_ / "wrote" / "0-snapshot.pt"), "gate's");
  auto again = recover_set_aside(run_);  // nothing left to do
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->empty());
}

TEST_F(FreshPaths, PuttingBackTwiceMovesNothingTwice) {
  write(here_ / "snapshot.pt", "user's");
  auto aside = set_aside({"snapshot.pt"}, here_, run_, attempt_);
  ASSERT_TRUE(aside);
  ASSERT_TRUE(put_back(*aside));
  auto twice = put_back(*aside);
  ASSERT_TRUE(twice);
  EXPECT_TRUE(twice->empty());
  EXPECT_EQ(read(here_ / "snapshot.pt"), "user's");
}

TEST_F(FreshPaths, AnUnreadableManifestIsAnErrorThatSaysWhatToDoAndMovesNothing) {
  write(run_ / kSetAsideManifest, "{ not json");
  auto lines = recover_set_aside(run_);
  ASSERT_FALSE(lines);
  EXPECT_EQ(lines.error().kind, ErrorKind::kInput);
  EXPECT_EQ(lines.error().file, (run_ / kSetAsideManifest).string());
  EXPECT_NE(lines.error().hint.find("by hand"), std::string::npos);
  EXPECT_TRUE(fs::exists(run_ / kSetAsideManifest));
}

// What fresh_start names when a gate still loads an earlier gate's file: its last writer.
TEST_F(FreshPaths, AnEarlierCheckpointIsNamedByItsLastWriter) {
  const std::string ckpt = (here_ / "snapshot.pt").string();
  auto line = [&](int step) {
    return fmt::format("{{\"ev\":\"ckpt\",\"step\":{},\"path\":\"{}\"}}\n", step, ckpt);
  };
  write(run_ / "01-single.1" / "probe-rank0.jsonl", line(0) + line(1) + line(19));
  write(run_ / "02-dp.1" / "probe-rank0.jsonl", line(0) + line(7));
  const auto named = earlier_checkpoints(run_, run_ / "03-target.1");
  ASSERT_EQ(named.count(ckpt), 1u);
  EXPECT_EQ(named.at(ckpt), "gate dp (attempt 1), step 7");
  EXPECT_EQ(earlier_checkpoints(run_, run_ / "02-dp.1").at(ckpt),
            "gate single (attempt 1), step 19");
}

}  // namespace
}  // namespace bigmac::attempt
