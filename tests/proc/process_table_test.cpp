#include "proc/process_table.h"

#include <gtest/gtest.h>
#include <unistd.h>

namespace bigmac::proc {
namespace {

TEST(ProcessTable, ReadsItself) {
  auto self = read_process(::getpid());
  ASSERT_TRUE(self.has_value());
  EXPECT_EQ(self->ppid, ::getppid());
  EXPECT_EQ(self->pgid, ::getpgrp());
  EXPECT_FALSE(self->zombie());
  EXPECT_NE(self->command_line.find("bigmac_proc_tests"), std::string::npos) << self->command_line;
}

TEST(ProcessTable, ListsItselfInItsGroup) {
  bool found = false;
  for (const ProcessInfo& p : processes_in_group(::getpgrp())) found |= p.pid == ::getpid();
  EXPECT_TRUE(found);
}

TEST(ProcessTable, MissingPidIsNullopt) {
  // pid_max is at most 2^22, so this pid cannot exist.
  EXPECT_FALSE(read_process(1 << 23).has_value());
}

}  // namespace
}  // namespace bigmac::proc
