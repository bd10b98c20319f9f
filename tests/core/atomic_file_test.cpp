#include "core/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "core/disk_reserve.h"

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

TEST_F(AtomicFileTest, ADiskReserveHoldsAllocatedBlocksUntilReleased) {
  const fs::path file = dir_ / ".disk-reserve";
  {
    auto reserve = DiskReserve::hold(file, 1 << 20);
    ASSERT_TRUE(reserve) << reserve.error().format();
    struct stat st {};
    ASSERT_EQ(::stat(file.c_str(), &st), 0);
    EXPECT_GE(static_cast<long long>(st.st_blocks) * 512, 1 << 20) << "blocks allocated";
    EXPECT_TRUE(release_disk_reserves());
    EXPECT_FALSE(fs::exists(file));
    EXPECT_FALSE(release_disk_reserves()) << "nothing left to free";
  }
  auto again = DiskReserve::hold(file, 4096);
  ASSERT_TRUE(again);
  DiskReserve moved = std::move(*again);
  EXPECT_TRUE(fs::exists(file));
  moved = DiskReserve();
  EXPECT_FALSE(fs::exists(file)) << "removed with its reserve";
}

TEST_F(AtomicFileTest, AWriteErrorNamesTheTargetNotItsTemporaryCopy) {
  auto failed = write_file_atomically("/proc/bigmac-no-such-file", "data");
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().format().find(".tmp"), std::string::npos) << failed.error().format();
}

}  // namespace
}  // namespace bigmac
