// End-to-end tests of the commands that read logs by hand (`parse`, `diagnose`, `compare`): with
// -c they read the logs as the configuration's trainer.log_format and [logs.fields] say.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "testing/run_program.h"

namespace {

using bigmac::testing::run_program;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

const std::string kBinary = std::string(BIGMAC_BIN_DIR) + "/bigmac-bringup";
const std::string kStoredBaseline = std::string(BIGMAC_SOURCE_DIR) + "/baselines/demo-cpu.json";

// A format no built-in adapter reads: `>> 3 | L 4.4 | G 0.9 | R 0.001 | S 8`.
constexpr std::string_view kFieldsConfig =
    "[trainer]\n"
    "log_format = \"regex\"\n"
    "\n"
    "[logs.fields]\n"
    "global_step = '^>> (\\d+) '\n"
    "loss = '\\| L (\\S+)'\n"
    "grad_norm = '\\| G (\\S+)'\n"
    "lr = '\\| R (\\S+)'\n"
    "samples_per_step = '\\| S (\\d+)'\n";

class LogCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("bigmac-log-commands-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, std::string_view text) {
    fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  fs::path dir_;
};

TEST_F(LogCommands, ParseWithAConfigurationUsesItsFormatAndFields) {
  std::string config = write("trainer.toml", kFieldsConfig);
  std::string log = write("rank0.log", ">> 0 | L 4.5 | S 8\n>> 1 | L 4.25 | S 8\nhello\n");
  auto detected = run_program({kBinary, "parse", log});
  EXPECT_EQ(detected.exit_code, 0) << detected.err;
  EXPECT_THAT(detected.out, HasSubstr("rank 0 (" + log + "): 0 steps"));
  auto configured = run_program({kBinary, "parse", log, "-c", config});
  EXPECT_EQ(configured.exit_code, 0) << configured.err;
  EXPECT_THAT(configured.out, HasSubstr("regex format"));
  EXPECT_THAT(configured.out, HasSubstr("2 steps 0..1 [loss samples_per_step]"));

  auto records = run_program({kBinary, "parse", log, "-c", config, "--records"});
  EXPECT_EQ(records.exit_code, 0) << records.err;
  std::istringstream lines(records.out);
  std::string first;
  ASSERT_TRUE(std::getline(lines, first));
  auto doc = nlohmann::json::parse(first);
  EXPECT_EQ(doc["ev"], "step");
  EXPECT_EQ(doc["global_step"], 0);
  EXPECT_EQ(doc["loss"], 4.5);
  EXPECT_EQ(doc["samples_per_step"], 8);
}

TEST_F(LogCommands, ABadRegexIsAConfigErrorWithFileLineAndKey) {
  std::string config =
      write("bad.toml", "[trainer]\nlog_format = \"regex\"\n\n[logs.fields]\nloss = 'L (\\d+'\n");
  std::string log = write("rank0.log", ">> 0 | L 4.5\n");
  for (const char* command : {"parse", "diagnose"}) {
    auto r = run_program({kBinary, command, log, "-c", config});
    EXPECT_EQ(r.exit_code, 2) << command << r.out;
    EXPECT_THAT(r.err, HasSubstr(config + ":5:"));
    EXPECT_THAT(r.err, HasSubstr("logs.fields.loss"));
    EXPECT_THAT(r.err, HasSubstr("malformed regex"));
  }
}

TEST_F(LogCommands, DiagnoseWithAConfigurationSeesTheStepsItsFieldsRead) {
  std::string config = write("trainer.toml", kFieldsConfig);
  std::string log = write("rank0.log", ">> 0 | L 4.5\n>> 1 | L nan\n");
  auto detected = run_program({kBinary, "diagnose", log});
  EXPECT_EQ(detected.exit_code, 1) << detected.out << detected.err;  // no step read: nothing found
  auto configured = run_program({kBinary, "diagnose", log, "-c", config});
  EXPECT_EQ(configured.exit_code, 0) << configured.out << configured.err;
  EXPECT_THAT(configured.out, HasSubstr("loss_non_finite"));
}

TEST_F(LogCommands, CompareWithAConfigurationComparesWhatItsFieldsRead) {
  // The stored demo baseline, written back in the custom format value for value.
  std::ifstream in(kStoredBaseline);
  auto baseline = nlohmann::json::parse(in);
  std::string text;
  for (const auto& step : baseline["steps"]) {
    char line[256];
    std::snprintf(line, sizeof line, ">> %lld | L %.17g | G %.17g | R %.17g | S %lld\n",
                  step["global_step"].get<long long>(), step["loss"].get<double>(),
                  step["grad_norm"].get<double>(), step["lr"].get<double>(),
                  step["samples_per_step"].get<long long>());
    text += line;
  }
  std::string log = write("rank0.log", text);
  std::string config = write("trainer.toml", kFieldsConfig);
  auto detected = run_program({kBinary, "compare", log, "--baseline", kStoredBaseline});
  EXPECT_EQ(detected.exit_code, 1) << detected.out << detected.err;  // compared nothing
  auto configured =
      run_program({kBinary, "compare", log, "--baseline", kStoredBaseline, "-c", config});
  EXPECT_EQ(configured.exit_code, 0) << configured.out << configured.err;
  EXPECT_THAT(configured.out, HasSubstr("comparison: match"));
}

}  // namespace
