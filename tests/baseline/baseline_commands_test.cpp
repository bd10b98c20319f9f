#include "baseline/baseline_commands.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "core/atomic_file.h"

namespace bigmac::baseline {
namespace {

class BaselineCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("bigmac-bcmd-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path write_log(const std::string& name, double loss_at_2) {
    std::string text =
        "{\"ev\":\"run\",\"rank\":0,\"t\":1,\"world_size\":1,\"local_rank\":0,\"device\":\"cpu\","
        "\"backend\":\"none\",\"dtype\":\"float32\",\"seed\":1,\"torch_version\":\"1.13.1\","
        "\"pid\":1,\"tool_version\":\"0.1.0\"}\n"
        "{\"ev\":\"model\",\"rank\":0,\"t\":1,\"param_count\":100,\"param_digest\":\"ab\"}\n";
    for (int i = 0; i < 3; ++i) {
      text += "{\"ev\":\"step\",\"rank\":0,\"t\":2,\"global_step\":" + std::to_string(i) +
              ",\"loss\":" + std::to_string(i == 2 ? loss_at_2 : 4.0 - i) +
              ",\"grad_norm\":1.5,\"lr\":0.001,\"samples_per_step\":8,\"step_ms\":1}\n";
    }
    EXPECT_TRUE(write_file_atomically(dir_ / name, text));
    return dir_ / name;
  }

  std::filesystem::path dir_;
};

TEST_F(BaselineCommands, RecordShowCompareDiff) {
  auto records = read_log_records(write_log("single.jsonl", 2.0));
  ASSERT_TRUE(records);
  ASSERT_EQ(record_baseline(*records, false, dir_ / "b.json", "demo", "").code,
            ExitCode::kGateFailed);
  const CommandResult rec = record_baseline(*records, true, dir_ / "b.json", "demo", "cfg");
  ASSERT_EQ(rec.code, ExitCode::kOk) << rec.text;

  const CommandResult show = show_baseline(dir_ / "b.json");
  EXPECT_EQ(show.code, ExitCode::kOk);
  EXPECT_NE(show.text.find("param_count 100"), std::string::npos) << show.text;

  EXPECT_EQ(compare_logs({write_log("same.jsonl", 2.0)}, dir_ / "b.json").code, ExitCode::kOk);
  const CommandResult bad = compare_logs({write_log("bad.jsonl", 2.5)}, dir_ / "b.json");
  EXPECT_EQ(bad.code, ExitCode::kGateFailed);
  EXPECT_NE(bad.text.find("regression"), std::string::npos) << bad.text;
  EXPECT_EQ(compare_logs({dir_ / "missing.jsonl"}, dir_ / "b.json").code, ExitCode::kBadInput);
  // A directory opens but is not a log: an error naming it, not an empty comparison.
  std::filesystem::create_directories(dir_ / "run");
  const CommandResult directory = compare_logs({dir_ / "run"}, dir_ / "b.json");
  EXPECT_EQ(directory.code, ExitCode::kBadInput) << directory.text;
  EXPECT_NE(directory.text.find("it is a directory"), std::string::npos) << directory.text;
  EXPECT_NE(directory.text.find((dir_ / "run").string()), std::string::npos) << directory.text;

  auto other = read_log_records(write_log("other.jsonl", 2.5));
  ASSERT_EQ(record_baseline(*other, true, dir_ / "c.json", "demo2", "cfg").code, ExitCode::kOk);
  EXPECT_EQ(diff_baseline_files(dir_ / "b.json", dir_ / "b.json").code, ExitCode::kOk);
  const CommandResult diff = diff_baseline_files(dir_ / "b.json", dir_ / "c.json");
  EXPECT_EQ(diff.code, ExitCode::kGateFailed);
  EXPECT_NE(diff.text.find("first divergent step 2"), std::string::npos) << diff.text;
}

TEST_F(BaselineCommands, RecordRefusesNonFinite) {
  // The last loss becomes NaN, written the way Python's json writes it.
  std::string text = *read_file(write_log("nan.jsonl", 7.25));
  text.replace(text.rfind("7.250000"), 8, "NaN");
  ASSERT_TRUE(write_file_atomically(dir_ / "nan.jsonl", text));
  auto nan_records = read_log_records(dir_ / "nan.jsonl");
  const CommandResult r = record_baseline(*nan_records, true, dir_ / "n.json", "n", "");
  EXPECT_EQ(r.code, ExitCode::kGateFailed) << r.text;
  EXPECT_NE(r.text.find("non-finite loss"), std::string::npos) << r.text;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "n.json"));
}

// Issue 30 item 7: `compare` said "match" for a log with every step twice, for two files of one
// rank where the second had a NaN, and for two ranks with different losses.
TEST_F(BaselineCommands, CompareRefusesLogsThatContradictThemselves) {
  auto records = read_log_records(write_log("single.jsonl", 2.0));
  ASSERT_EQ(record_baseline(*records, true, dir_ / "b.json", "demo", "").code, ExitCode::kOk);
  const std::filesystem::path same = write_log("rank0.jsonl", 2.0);

  std::string twice = *read_file(same) + *read_file(write_log("again.jsonl", 2.5));
  ASSERT_TRUE(write_file_atomically(dir_ / "twice.jsonl", twice));
  const CommandResult repeated = compare_logs({dir_ / "twice.jsonl"}, dir_ / "b.json");
  EXPECT_EQ(repeated.code, ExitCode::kGateFailed) << repeated.text;
  EXPECT_NE(repeated.text.find("rank 0 logs step 0 twice (" + (dir_ / "twice.jsonl").string() +
                               ":3 and " + (dir_ / "twice.jsonl").string() + ":8)"),
            std::string::npos)
      << repeated.text;

  std::string nan = *read_file(write_log("nan.jsonl", 7.25));
  nan.replace(nan.rfind("7.250000"), 8, "NaN");
  ASSERT_TRUE(write_file_atomically(dir_ / "nan.jsonl", nan));
  const CommandResult second_file = compare_logs({same, dir_ / "nan.jsonl"}, dir_ / "b.json");
  EXPECT_EQ(second_file.code, ExitCode::kGateFailed) << second_file.text;
  EXPECT_NE(second_file.text.find("comparison: not made"), std::string::npos) << second_file.text;

  const CommandResult nan_alone = compare_logs({dir_ / "nan.jsonl"}, dir_ / "b.json");
  EXPECT_EQ(nan_alone.code, ExitCode::kGateFailed) << nan_alone.text;
  EXPECT_NE(nan_alone.text.find("rank 0's loss is nan at step 2"), std::string::npos)
      << nan_alone.text;

  // Rank 1 logs the same steps with another loss at step 2.
  std::string rank1 = *read_file(write_log("r1.jsonl", 2.5));
  for (std::size_t at = rank1.find("\"rank\":0"); at != std::string::npos;
       at = rank1.find("\"rank\":0", at)) {
    rank1.replace(at, 8, "\"rank\":1");
  }
  ASSERT_TRUE(write_file_atomically(dir_ / "r1.jsonl", rank1));
  const CommandResult ranks = compare_logs({same, dir_ / "r1.jsonl"}, dir_ / "b.json");
  EXPECT_EQ(ranks.code, ExitCode::kGateFailed) << ranks.text;
  EXPECT_NE(ranks.text.find("comparison: rank 1: regression — loss diverges at step 2"),
            std::string::npos)
      << ranks.text;

  // Ranks that agree are each compared, and say so.
  std::string agree = *read_file(same);
  for (std::size_t at = agree.find("\"rank\":0"); at != std::string::npos;
       at = agree.find("\"rank\":0", at)) {
    agree.replace(at, 8, "\"rank\":1");
  }
  ASSERT_TRUE(write_file_atomically(dir_ / "agree.jsonl", agree));
  const CommandResult both = compare_logs({same, dir_ / "agree.jsonl"}, dir_ / "b.json");
  EXPECT_EQ(both.code, ExitCode::kOk) << both.text;
  EXPECT_NE(both.text.find("2 series with steps compared, rank 0 to rank 1: none fails"),
            std::string::npos)
      << both.text;
}

}  // namespace
}  // namespace bigmac::baseline
