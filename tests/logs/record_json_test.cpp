#include "logs/record_json.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "logs/parse_summary.h"
#include "stream_fixture.h"

namespace bigmac::logs {
namespace {

namespace fs = std::filesystem;

TEST(RecordJson, AStepWithEveryKindOfValue) {
  StepRecord step;
  step.at = RecordOrigin{2, 7, 1.5};
  step.global_step = 3;
  step.loss = std::numeric_limits<double>::quiet_NaN();
  step.lr = 1e-4;
  step.extra = {{"epoch", 0.5}, {"mfu", -std::numeric_limits<double>::infinity()}};
  auto doc = nlohmann::json::parse(record_json_line(Record(step), "r2.log"));
  EXPECT_EQ(doc["ev"], "step");
  EXPECT_EQ(doc["file"], "r2.log");
  EXPECT_EQ(doc["line"], 7);
  EXPECT_EQ(doc["rank"], 2);
  EXPECT_EQ(doc["global_step"], 3);
  EXPECT_EQ(doc["loss"], "nan");
  EXPECT_DOUBLE_EQ(doc["lr"].get<double>(), 1e-4);
  EXPECT_FALSE(doc.contains("grad_norm"));  // absent, not 0
  EXPECT_EQ(doc["extra"]["epoch"], 0.5);
  EXPECT_EQ(doc["extra"]["mfu"], "-inf");
  // Fields in a fixed order: ev first, as in the contract.
  EXPECT_EQ(record_json_line(Record(step), "r2.log").rfind("{\"ev\":\"step\",\"file\"", 0), 0u);
}

TEST(RecordJson, ParseRecordsPrintsWhatTheAdaptersRead) {
  const fs::path file =
      fs::temp_directory_path() / ("bigmac-records-" + std::to_string(getpid()) + "-rank1.log");
  std::ofstream(file) << "[cfg] world_size=2 pp=1 split_points=[]\n"
                         "{'loss': 2.5, 'learning_rate': 0.001, 'epoch': 0.1}\n"
                         "some warning\n"
                         "{'loss': 'x'}\n";
  std::ostringstream out;
  std::ostringstream err;
  ASSERT_EQ(run_parse({file.string()}, LogFormat::kAuto, ParseOutput::kRecords, out, err), 0);
  std::istringstream lines(out.str());
  std::vector<nlohmann::json> docs;
  for (std::string line; std::getline(lines, line);) docs.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(docs.size(), 2u) << out.str();
  EXPECT_EQ(docs[0]["ev"], "cfg");
  EXPECT_EQ(docs[0]["world_size"], 2);
  EXPECT_EQ(docs[0]["split_points"], nlohmann::json::array());
  EXPECT_EQ(docs[0]["rank"], 1);  // from the file name
  EXPECT_EQ(docs[1]["ev"], "step");
  EXPECT_EQ(docs[1]["line"], 2);
  EXPECT_EQ(docs[1]["global_step"], 0);
  EXPECT_EQ(docs[1]["loss"], 2.5);
  EXPECT_EQ(docs[1]["lr"], 0.001);
  EXPECT_EQ(docs[1]["extra"]["epoch"], 0.1);
  // What was not read is said on stderr, with its line.
  EXPECT_NE(err.str().find(":4: not read: field loss: expected a number"), std::string::npos)
      << err.str();
  fs::remove(file);
}

}  // namespace
}  // namespace bigmac::logs
