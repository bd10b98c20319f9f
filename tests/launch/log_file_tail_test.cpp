#include "launch/log_file_tail.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace bigmac::launch {
namespace {

namespace fs = std::filesystem;

TEST(LogFileTail, FollowsAppendsAndRestartsAfterTruncation) {
  const fs::path path = fs::temp_directory_path() / ("bigmac-tail-" + std::to_string(::getpid()));
  fs::remove(path);
  LogFileTail tail(path);
  std::string out;
  EXPECT_EQ(tail.read(out), 0u);  // not there yet
  { std::ofstream(path) << "one\n"; }
  EXPECT_EQ(tail.read(out), 4u);
  { std::ofstream(path, std::ios::app) << "two\n"; }
  EXPECT_EQ(tail.read(out), 4u);
  EXPECT_EQ(out, "one\ntwo\n");
  EXPECT_EQ(tail.read(out), 0u);
  { std::ofstream(path, std::ios::trunc) << "x\n"; }  // a restarted writer
  out.clear();
  EXPECT_EQ(tail.read(out), 2u);
  EXPECT_EQ(out, "x\n");
  fs::remove(path);
}

TEST(LogFileTail, ReadsAtMostTheLimit) {
  const fs::path path =
      fs::temp_directory_path() / ("bigmac-tail-big-" + std::to_string(::getpid()));
  { std::ofstream(path) << std::string(200 * 1024, 'a'); }
  LogFileTail tail(path);
  std::string out;
  EXPECT_EQ(tail.read(out, 64 * 1024), 64u * 1024u);
  EXPECT_EQ(tail.read(out), 136u * 1024u);
  fs::remove(path);
}

}  // namespace
}  // namespace bigmac::launch
