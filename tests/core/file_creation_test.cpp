// core/file_creation: the tool never writes through a planted link, into a FIFO or into a
// hard-linked file, and its temporary names cannot be guessed (issue 20, D4).

#include "core/file_creation.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/atomic_file.h"

namespace bigmac {
namespace {

namespace fs = std::filesystem;

class FileCreationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("bigmac-create-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "victim") << "precious";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string victim() const {
    std::ifstream in(dir_ / "victim");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  void write(const Fd& fd, std::string_view text) {
    ASSERT_EQ(::write(fd.get(), text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }
  fs::path dir_;
};

TEST_F(FileCreationTest, NoModeFollowsAPlantedSymbolicLink) {
  for (Existing mode :
       {Existing::kRefuse, Existing::kTruncate, Existing::kKeep, Existing::kAppend}) {
    fs::remove(dir_ / "out");
    fs::create_symlink(dir_ / "victim", dir_ / "out");
    auto fd = create_file(dir_ / "out", mode);
    ASSERT_FALSE(fd) << "mode " << static_cast<int>(mode);
    EXPECT_NE(fd.error().format().find(dir_.string() + "/out"), std::string::npos);
    EXPECT_EQ(victim(), "precious");
  }
  fs::remove(dir_ / "out");
  fs::create_symlink(dir_ / "victim", dir_ / "out");
  auto fd = create_file(dir_ / "out", Existing::kTruncate);
  ASSERT_FALSE(fd);
  EXPECT_NE(fd.error().hint.find("never writes through"), std::string::npos) << fd.error().format();
}

TEST_F(FileCreationTest, AFifoIsRefusedAtOnceInsteadOfBlocking) {
  ASSERT_EQ(::mkfifo((dir_ / "pipe").c_str(), 0644), 0);
  // Without O_NONBLOCK the open would wait for a reader forever.
  auto fd = create_file(dir_ / "pipe", Existing::kTruncate);
  ASSERT_FALSE(fd);
  EXPECT_NE(fd.error().message.find("a FIFO (named pipe), not a regular file"), std::string::npos)
      << fd.error().format();
}

TEST_F(FileCreationTest, AHardLinkedFileIsNotWritten) {
  ASSERT_EQ(::link((dir_ / "victim").c_str(), (dir_ / "out").c_str()), 0);
  auto fd = create_file(dir_ / "out", Existing::kTruncate);
  ASSERT_FALSE(fd);
  EXPECT_NE(fd.error().message.find("2 hard links"), std::string::npos) << fd.error().format();
  EXPECT_EQ(victim(), "precious");
}

TEST_F(FileCreationTest, ModesTreatAnExistingRegularFileAsAsked) {
  std::ofstream(dir_ / "out") << "old";
  EXPECT_FALSE(create_file(dir_ / "out", Existing::kRefuse));
  {
    auto fd = create_file(dir_ / "out", Existing::kAppend);
    ASSERT_TRUE(fd) << fd.error().format();
    write(*fd, "+new");
  }
  EXPECT_EQ(read_file(dir_ / "out").value(), "old+new");
  {
    auto fd = create_file(dir_ / "out", Existing::kKeep);
    ASSERT_TRUE(fd);
  }
  EXPECT_EQ(read_file(dir_ / "out").value(), "old+new");
  {
    auto fd = create_file(dir_ / "out", Existing::kTruncate);
    ASSERT_TRUE(fd);
    write(*fd, "x");
  }
  EXPECT_EQ(read_file(dir_ / "out").value(), "x");
  auto fresh = create_file(dir_ / "new", Existing::kRefuse);
  ASSERT_TRUE(fresh);
  EXPECT_TRUE(fs::is_regular_file(dir_ / "new"));
}

TEST_F(FileCreationTest, TemporaryNamesAreUnpredictableAndNeverPlantedOnes) {
  std::set<std::string> names;
  for (int i = 0; i < 64; ++i) {
    auto tmp = create_temporary_file(dir_ / "state.json");
    ASSERT_TRUE(tmp) << tmp.error().format();
    EXPECT_EQ(tmp->path.parent_path(), dir_);
    names.insert(tmp->path.filename().string());
  }
  EXPECT_EQ(names.size(), 64u);
  // The old scheme was "state.json.tmp.<pid>": a link planted there must stay untouched.
  const fs::path old = dir_ / ("state.json.tmp." + std::to_string(::getpid()));
  fs::create_symlink(dir_ / "victim", old);
  ASSERT_TRUE(write_file_atomically(dir_ / "state.json", "{}"));
  EXPECT_EQ(victim(), "precious");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(old)));
}

// Issue 30 item 8: `-o /dev/stdout` replaced the link, `-o /dev/full` the device node.
TEST_F(FileCreationTest, AnAtomicWriteNeitherFollowsNorReplacesALink) {
  fs::create_symlink(dir_ / "victim", dir_ / "state.json");
  auto written = write_file_atomically(dir_ / "state.json", "new");
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().kind, ErrorKind::kInput);
  EXPECT_NE(written.error().message.find("it is a symbolic link, not a regular file"),
            std::string::npos)
      << written.error().format();
  EXPECT_EQ(victim(), "precious");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir_ / "state.json")));
}

TEST_F(FileCreationTest, AnAtomicWriteLeavesAFifoAndADirectoryAsTheyAre) {
  ASSERT_EQ(::mkfifo((dir_ / "pipe").c_str(), 0644), 0);
  auto fifo = write_file_atomically(dir_ / "pipe", "new");
  ASSERT_FALSE(fifo);
  EXPECT_NE(fifo.error().message.find("it is a FIFO"), std::string::npos);
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(dir_ / "pipe")));
  fs::create_directories(dir_ / "folder");
  auto folder = write_file_atomically(dir_ / "folder", "new");
  ASSERT_FALSE(folder);
  EXPECT_NE(folder.error().message.find("it is a directory"), std::string::npos);
  // Nothing is left beside them: the check comes before the temporary file.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator{}), 3);
}

TEST_F(FileCreationTest, AnAtomicWriteOfADirectoryWithoutRoomNamesTheTarget) {
  auto written = write_file_atomically(dir_ / "no-such-dir" / "report.html", "x");
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error().file, (dir_ / "no-such-dir" / "report.html").string());
  EXPECT_EQ(written.error().format().find(".tmp"), std::string::npos) << written.error().format();
}

TEST_F(FileCreationTest, DirectoriesExclusiveOrExisting) {
  ASSERT_TRUE(create_directory(dir_ / "a", true));
  auto again = create_directory(dir_ / "a", true);
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("File exists"), std::string::npos);
  EXPECT_TRUE(create_directory(dir_ / "a", false));
  auto file = create_directory(dir_ / "victim", false);
  ASSERT_FALSE(file);
  EXPECT_NE(file.error().message.find("it is a regular file"), std::string::npos)
      << file.error().format();
  fs::create_symlink(dir_ / "a", dir_ / "link");
  EXPECT_TRUE(create_directory(dir_ / "link", false));  // named by the caller: followed
  EXPECT_FALSE(create_directory(dir_ / "link", true));
}

}  // namespace
}  // namespace bigmac
