#include "trainer/log_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

namespace bigmac::trainer {
namespace {

TEST(LogWriter, EventHasCommonFieldsThenOwnFields) {
  LogEvent event(EventKind::kStep, 3, 1764412800.25);
  event.field(FieldKey::kGlobalStep, 2)
      .field(FieldKey::kLoss, 4.17)
      .field(FieldKey::kName, "a\"b")
      .field(FieldKey::kShape, std::vector<std::int64_t>{2, 32})
      .field(FieldKey::kTied, std::vector<std::string>{"x"});
  EXPECT_EQ(event.line(),
            "{\"ev\":\"step\",\"rank\":3,\"t\":1764412800.250000,\"global_step\":2,\"loss\":4.17,"
            "\"name\":\"a\\\"b\",\"shape\":[2,32],\"tied\":[\"x\"]}");
}

TEST(LogWriter, DoublesAreFloatsAndNonFiniteIsBare) {
  EXPECT_EQ(format_json_double(4.0), "4.0");
  EXPECT_EQ(format_json_double(0.0006), "0.0006");
  EXPECT_EQ(format_json_double(1e-20), "1e-20");
  EXPECT_EQ(format_json_double(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(format_json_double(std::numeric_limits<double>::infinity()), "Infinity");
  EXPECT_EQ(format_json_double(-std::numeric_limits<double>::infinity()), "-Infinity");
  EXPECT_EQ(std::stod(format_json_double(0.1 + 0.2)), 0.1 + 0.2) << "round trip";
  EXPECT_EQ(quote_json("tab\there\n\x01"), "\"tab\\there\\n\\u0001\"");
}

TEST(LogWriter, WritesOneFlushedLinePerEvent) {
  auto path = std::filesystem::temp_directory_path() /
              ("bigmac-log-writer-" + std::to_string(getpid()) + ".jsonl");
  std::filesystem::remove(path);
  {
    auto writer = LogWriter::open(path.string(), 1);
    ASSERT_TRUE(writer);
    writer->write(writer->event(EventKind::kRun).field(FieldKey::kWorldSize, 2));
    // Flushed per line: a reader sees the line while the writer is still open.
    std::ifstream in(path);
    std::string line;
    ASSERT_TRUE(std::getline(in, line));
    EXPECT_EQ(line.rfind("{\"ev\":\"run\",\"rank\":1,", 0), 0u) << line;
    writer->write(writer->event(EventKind::kDone).field(FieldKey::kSteps, 0));
  }
  std::ifstream in(path);
  int lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  EXPECT_EQ(lines, 2);
  std::filesystem::remove(path);
}

TEST(LogWriter, UnwritablePathIsAnError) {
  auto writer = LogWriter::open("/nonexistent-dir/x.jsonl", 0);
  ASSERT_FALSE(writer);
  EXPECT_EQ(writer.error().file, "/nonexistent-dir/x.jsonl");
}

}  // namespace
}  // namespace bigmac::trainer
