#include "config/data_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace bigmac::config {
namespace {

TEST(DataFile, ConvertsTomlToJsonWithPositions) {
  auto file = parse_data_file(R"(
id = "dp"
order = 2
[[check]]
name = "finite_loss"
tolerance = 1e-4
[[check]]
name = "step_sequence"
)",
                              "stages/02-dp.toml");
  ASSERT_TRUE(file) << file.error().format();
  EXPECT_EQ(file->root["id"], "dp");
  EXPECT_EQ(file->root["order"], 2);
  EXPECT_EQ(file->root["check"][1]["name"], "step_sequence");
  EXPECT_DOUBLE_EQ(file->root["check"][0]["tolerance"].get<double>(), 1e-4);
  Error e = file->error_at("check[1].name", "unknown check");
  EXPECT_EQ(e.line, 8);
  EXPECT_EQ(e.file, "stages/02-dp.toml");
  EXPECT_EQ(e.format().rfind("stages/02-dp.toml:8:", 0), 0u) << e.format();
}

TEST(DataFile, SyntaxErrorsAreLocated) {
  auto file = parse_data_file("a = [1,\n", "x.toml");
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().file, "x.toml");
  EXPECT_GT(file.error().line, 0);
}

}  // namespace
}  // namespace bigmac::config
