#include "core/atomic_file.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace bigmac {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("bigmac-atomic-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(AtomicFileTest, WritesThenReplacesWithoutLeavingTemporaries) {
  fs::path file = dir_ / "state.json";
  ASSERT_TRUE(write_file_atomically(file, "first"));
  ASSERT_TRUE(write_file_atomically(file, "second"));
  EXPECT_EQ(read_file(file).value(), "second");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}), 1);
}

TEST_F(AtomicFileTest, ErrorsNameTheFile) {
  auto missing = read_file(dir_ / "nope.toml");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().format().find("nope.toml"), std::string::npos);
  auto unwritable = write_file_atomically(dir_ / "no-such-dir" / "x", "data");
  ASSERT_FALSE(unwritable);
  EXPECT_NE(unwritable.error().format().find("no-such-dir"), std::string::npos);
}

}  // namespace
}  // namespace bigmac
