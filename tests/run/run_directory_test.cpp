#include "run/run_directory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "core/atomic_file.h"
#include "run/run_status.h"

namespace bigmac::run {
namespace {

class RunDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("bigmac-rundir-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::filesystem::path root_;
};

RunState sample() {
  RunState s = RunState::fresh("20261129-120000", {"single", "dp", "pp2"});
  s.gates[0].status = GateStatus::kPassed;
  s.gates[0].attempts = 1;
  s.gates[0].inputs = gates::GateInputs{{{"train.seed", "1234"}}, "bin 1 2", "abc"};
  s.gates[1].status = GateStatus::kFailed;
  s.gates[1].attempts = 2;
  s.gates[1].failed_check = "loss_vs_baseline";
  s.gates[1].route_back = "dp";
  s.gates[2].status = GateStatus::kSkipped;
  s.last = 1;
  s.current = "dp";
  s.message = "dp failed: loss_vs_baseline: diverges at step 3";
  s.history = {"single: pending -> running"};
  return s;
}

TEST_F(RunDirectoryTest, SaveLoadRoundTrip) {
  auto dir = RunDirectory::open(root_ / "run");
  ASSERT_TRUE(dir) << dir.error().format();
  auto none = dir->load();
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(dir->save(sample()));
  auto back = dir->load();
  ASSERT_TRUE(back && back->has_value());
  EXPECT_EQ(to_json(**back), to_json(sample()));
  EXPECT_EQ((*back)->last, 1u);
  // status reads without the lock, while the run holds it.
  auto status = read_run_state(root_ / "run");
  ASSERT_TRUE(status);
  const std::string text = format_status(*status, "reports/x");
  EXPECT_NE(text.find("run 20261129-120000: failed"), std::string::npos) << text;
  EXPECT_NE(text.find("loss_vs_baseline failed; route back: dp"), std::string::npos) << text;
  EXPECT_NE(text.find("next: bigmac-bringup resume reports/x  (continues at dp)"),
            std::string::npos)
      << text;
  EXPECT_FALSE(status_json(*status)["gates"][0].contains("inputs"));
  EXPECT_EQ(dir->attempt_dir(1, "dp", 2), root_ / "run" / "02-dp.2");
}

TEST_F(RunDirectoryTest, ASecondOpenerIsKeptOutUntilTheFirstCloses) {
  {
    auto first = RunDirectory::open(root_ / "run");
    ASSERT_TRUE(first);
    auto second = RunDirectory::open(root_ / "run");
    ASSERT_FALSE(second);
    EXPECT_EQ(second.error().kind, ErrorKind::kInfrastructure);
    EXPECT_NE(second.error().message.find("pid " + std::to_string(::getpid())), std::string::npos)
        << second.error().message;
    RunDirectory moved = std::move(*first);  // the lock moves with the object
    EXPECT_FALSE(RunDirectory::open(root_ / "run"));
  }
  EXPECT_TRUE(RunDirectory::open(root_ / "run"));
}

TEST_F(RunDirectoryTest, StatusCommandAndActionLines) {
  {
    auto dir = RunDirectory::open(root_ / "run");
    ASSERT_TRUE(dir && dir->save(sample()));
  }
  const StatusOutput text = status_command((root_ / "run").string(), false);
  EXPECT_EQ(text.code, ExitCode::kOk);
  EXPECT_NE(text.text.find("2 dp       failed"), std::string::npos) << text.text;
  const StatusOutput json = status_command((root_ / "run").string(), true);
  EXPECT_EQ(nlohmann::json::parse(json.text)["phase"], "failed");
  EXPECT_EQ(status_command((root_ / "none").string(), false).code, ExitCode::kBadInput);
  EXPECT_EQ(format_action(StopWithFailure{"dp", "loss_vs_baseline", "single", "x"}),
            "gate dp failed at check loss_vs_baseline; route back to gate single");
  EXPECT_EQ(format_action(StopInterrupted{"dp"}),
            "interrupted during gate dp; resume continues there");
  EXPECT_EQ(format_action(Finish{"5 gates passed"}), "5 gates passed");
}

TEST_F(RunDirectoryTest, ThePhaseIsDerivedFromTheGatesNotTrustedFromTheFile) {
  std::filesystem::create_directories(root_ / "stale");
  ASSERT_TRUE(write_file_atomically(
      root_ / "stale/state.json",
      "{\"format\":\"bigmac-run-state/1\",\"phase\":\"passed\",\"first\":\"single\","
      "\"last\":\"dp\",\"gates\":[{\"id\":\"single\",\"status\":\"passed\"},"
      "{\"id\":\"dp\",\"status\":\"failed\"}]}"));
  auto s = read_run_state(root_ / "stale");
  ASSERT_TRUE(s) << s.error().format();
  EXPECT_EQ(s->phase(), RunPhase::kFailed);
}

TEST_F(RunDirectoryTest, DamagedStateIsAnInputError) {
  std::filesystem::create_directories(root_ / "bad");
  ASSERT_TRUE(write_file_atomically(
      root_ / "bad/state.json",
      "{\"format\":\"bigmac-run-state/1\",\"gates\":[{\"id\":\"dp\",\"status\":\"odd\"}]}"));
  auto s = read_run_state(root_ / "bad");
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().key, "gates.dp.status");
  ASSERT_TRUE(write_file_atomically(root_ / "bad/state.json", "not json"));
  EXPECT_FALSE(read_run_state(root_ / "bad"));
  EXPECT_FALSE(read_run_state(root_ / "missing"));
}

TEST_F(RunDirectoryTest, RunIdsAndLatest) {
  EXPECT_EQ(make_run_id(1764417867), "20251129-120427");
  EXPECT_EQ(make_run_id(1764417867, 2), "20251129-120427-2");
  std::filesystem::create_directories(root_ / "a");
  std::filesystem::create_directories(root_ / "b");
  ASSERT_TRUE(point_latest(root_, root_ / "a"));
  ASSERT_TRUE(point_latest(root_, root_ / "b"));
  EXPECT_EQ(std::filesystem::read_symlink(root_ / "latest"), "b");
  EXPECT_TRUE(std::filesystem::equivalent(root_ / "latest", root_ / "b"));
}

// D4: a link planted in a run directory would redirect a write (the lock's pid, state.json,
// a rank's output) to any file; the directory is refused before anything is written.
TEST_F(RunDirectoryTest, PlantedLinksAreRefusedAndNothingIsWrittenThroughThem) {
  std::filesystem::create_directories(root_);
  ASSERT_TRUE(write_file_atomically(root_ / "victim", "precious"));
  for (const char* planted : {".lock", "state.json", "01-single.1/rank0.log", "01-single.1"}) {
    SCOPED_TRACE(planted);
    std::filesystem::remove_all(root_ / "run");
    std::filesystem::create_directories(root_ / "run" / "01-single.1");
    const std::filesystem::path link = root_ / "run" / planted;
    std::filesystem::remove_all(link);
    std::filesystem::create_symlink(root_ / "victim", link);
    auto dir = RunDirectory::open(root_ / "run");
    ASSERT_FALSE(dir);
    EXPECT_EQ(exit_code_for(dir.error().kind), ExitCode::kBadInput);
    EXPECT_NE(dir.error().message.find(std::string(planted) + " -> " + (root_ / "victim").string()),
              std::string::npos)
        << dir.error().format();
    EXPECT_EQ(read_file(root_ / "victim").value(), "precious");
  }
}

// D11: a run directory whose state.json is gone starts again at attempt 1; the folder of the
// earlier attempt must not be reused (its rank log would be appended to), nor lost.
TEST_F(RunDirectoryTest, AnEarlierAttemptFolderIsKeptAsideAndTheAttemptStartsEmpty) {
  auto dir = RunDirectory::open(root_ / "run");
  ASSERT_TRUE(dir);
  const auto folder = dir->attempt_dir(0, "single", 1);
  auto first = create_attempt_folder(folder);
  ASSERT_TRUE(first) << first.error().format();
  EXPECT_EQ(*first, "");
  ASSERT_TRUE(write_file_atomically(folder / "rank0.log", "old steps\n"));

  auto second = create_attempt_folder(folder);
  ASSERT_TRUE(second) << second.error().format();
  EXPECT_EQ(*second,
            "01-single.1 was left by an earlier attempt this run no longer records; kept as "
            "01-single.1.stale-1");
  EXPECT_TRUE(std::filesystem::is_empty(folder));
  EXPECT_EQ(read_file(root_ / "run" / "01-single.1.stale-1" / "rank0.log").value(), "old steps\n");
  auto third = create_attempt_folder(folder);
  ASSERT_TRUE(third);
  EXPECT_NE(third->find("kept as 01-single.1.stale-2"), std::string::npos) << *third;
}

// D5: `latest` is replaced only when it is the tool's own link to a sibling run folder.
TEST_F(RunDirectoryTest, LatestIsReplacedOnlyWhenItIsOurLink) {
  std::filesystem::create_directories(root_ / "a");
  ASSERT_TRUE(write_file_atomically(root_ / "latest", "my notes"));
  auto refused = point_latest(root_, root_ / "a");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("not bigmac-bringup's link"), std::string::npos);
  EXPECT_EQ(read_file(root_ / "latest").value(), "my notes");

  std::filesystem::remove(root_ / "latest");
  std::filesystem::create_directory_symlink("/tmp", root_ / "latest");
  EXPECT_FALSE(point_latest(root_, root_ / "a"));
  EXPECT_EQ(std::filesystem::read_symlink(root_ / "latest"), "/tmp");

  std::filesystem::remove(root_ / "latest");
  ASSERT_TRUE(point_latest(root_, root_ / "a"));
  EXPECT_EQ(std::filesystem::read_symlink(root_ / "latest"), "a");
}

}  // namespace
}  // namespace bigmac::run
