// What a run command does before its loop: where the run lives and where it started. The
// session itself (run-all, run GATE, resume end to end) is tested through the command in
// tests/cli.
#include "run/run_session.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "run/run_directory.h"

namespace bigmac::run {
namespace {

namespace fs = std::filesystem;

class RunSessionPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("bigmac-session-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "started-here");
    before_ = fs::current_path();
    fs::current_path(root_);
  }
  void TearDown() override {
    fs::current_path(before_);
    fs::remove_all(root_);
  }
  fs::path root_;
  fs::path before_;
};

TEST_F(RunSessionPaths, AGivenDirectoryIsTakenAsItIs) {
  EXPECT_EQ(choose_run_dir("elsewhere/run", RunMode::kResume), fs::path("elsewhere/run"));
}

TEST_F(RunSessionPaths, RunAllMakesANewRunAndResumeTakesTheLatest) {
  const fs::path fresh = choose_run_dir({}, RunMode::kAll);
  EXPECT_EQ(fresh.parent_path(), fs::path("reports"));
  EXPECT_EQ(fresh.filename().string().size(), std::string("20261129-114427").size()) << fresh;
  // A second run-all within the same second takes the next suffix, never the same folder.
  fs::create_directories(fresh);
  const fs::path second = choose_run_dir({}, RunMode::kAll);
  EXPECT_NE(second, fresh);
  ASSERT_TRUE(point_latest("reports", fresh));
  EXPECT_EQ(choose_run_dir({}, RunMode::kResume), fs::canonical(fresh));
  EXPECT_EQ(choose_run_dir({}, RunMode::kOne), fs::canonical(fresh));
}

TEST_F(RunSessionPaths, ARunContinuesWhereItStarted) {
  auto same = enter_start_directory(fs::current_path());
  ASSERT_TRUE(same) << same.error().format();
  EXPECT_EQ(*same, "");
  auto moved = enter_start_directory(root_ / "started-here");
  ASSERT_TRUE(moved) << moved.error().format();
  EXPECT_EQ(*moved,
            "continuing in " + (root_ / "started-here").string() + ", where the run started");
  EXPECT_EQ(fs::current_path(), root_ / "started-here");
  auto gone = enter_start_directory(root_ / "removed");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().kind, ErrorKind::kInput);
  EXPECT_NE(gone.error().format().find("cannot be entered"), std::string::npos)
      << gone.error().format();
  EXPECT_EQ(fs::current_path(), root_ / "started-here") << "a failed change stays where it was";
}

}  // namespace
}  // namespace bigmac::run
