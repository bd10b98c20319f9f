// Trainers nobody wrote for this tool, brought up with config only under the real torchrun
// (issue 14 items 2 and 4): each rank's complete output read from torchrun's per-worker files,
// and a plain DDP program measured by the probe alone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "run_all_fixture.h"

namespace {

using namespace bigmac::testing::e2e;
using ::testing::HasSubstr;

class OwnTrainer : public RunAll {
 protected:
  void SetUp() override {
    if (!fs::exists("/usr/bin/torchrun")) GTEST_SKIP() << "python3-torch's torchrun is missing";
    RunAll::SetUp();
  }
  std::string config() const override { return config_; }
  std::string config_;

  nlohmann::json summary() const {
    std::ifstream in(root_ / "run" / "summary.json");
    return nlohmann::json::parse(in);
  }
  std::string file_text(const fs::path& path) const {
    std::ifstream in(path);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }
};

TEST_F(OwnTrainer, BlockBufferedStdoutIsReadCompleteFromTorchrunsWorkerFiles) {
  config_ = std::string(BIGMAC_SOURCE_DIR) + "/tests/cli/fixtures/buffered-trainer.toml";
  std::vector<std::string> args = run_args();
  args.insert(args.end(), {"--until", "single"});
  ProgramResult r = bringup(args);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(gate_status("single"), "passed");
  // The console copy of rank lines is not read under torchrun: every step came from the
  // worker's own stdout.log, and the user's empty PYTHONUNBUFFERED replaced the default.
  const nlohmann::json gate = summary().at("gates").at(0);
  EXPECT_EQ(gate.at("steps").at("logged"), 20);
  const std::string plan = file_text(root_ / "run" / "01-single.1" / "launch-plan.json");
  const nlohmann::json launch = nlohmann::json::parse(plan);
  EXPECT_EQ(launch.at("ranks").at(0).at("env").at("PYTHONUNBUFFERED"), "");
  EXPECT_TRUE(launch.contains("torchrun_log_dir"));
}

TEST_F(OwnTrainer, PlainDdpProgramPassesSingleAndDpWithTheProbeAlone) {
  config_ = std::string(BIGMAC_SOURCE_DIR) + "/configs/plain-ddp.toml";
  std::vector<std::string> args = run_args();
  args.insert(args.end(), {"--until", "dp"});
  ProgramResult r = bringup(args);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(gate_status("single"), "passed");
  EXPECT_EQ(gate_status("dp"), "passed");
  EXPECT_THAT(summary().at("gates").at(1).at("field_sources").at("loss").get<std::string>(),
              HasSubstr("mean over 2 replicas"));
  const nlohmann::json gate = summary().at("gates").at(0);
  EXPECT_EQ(gate.at("steps").at("logged"), 20);
  const nlohmann::json sources = gate.at("field_sources");
  EXPECT_EQ(sources.at("loss"), "probe") << sources.dump();
  EXPECT_EQ(sources.at("grad_norm"), "probe");
  EXPECT_EQ(sources.at("param_digest"), "probe");
  EXPECT_THAT(sources.at("samples_per_step").get<std::string>(), HasSubstr("derived"));
  // The probe's loss is the one the program printed (4 decimals), step by step.
  std::string out;
  for (const auto& f :
       fs::recursive_directory_iterator(root_ / "run" / "01-single.1" / "torchrun")) {
    if (f.path().filename() == "stdout.log") out += file_text(f.path());
  }
  const std::string records = file_text(root_ / "run" / "01-single.1" / "records.json");
  const nlohmann::json steps = nlohmann::json::parse(records).at("steps");
  ASSERT_EQ(steps.size(), 20u);
  for (const auto& step : steps) {
    char printed[64];
    std::snprintf(printed, sizeof printed, "iter %d: loss %.4f", step.at("global_step").get<int>(),
                  step.at("loss").get<double>());
    EXPECT_THAT(out, HasSubstr(printed));
  }
  EXPECT_THAT(file_text(root_ / "run" / "summary.md"), HasSubstr("| `loss` | probe |"));
}

}  // namespace
