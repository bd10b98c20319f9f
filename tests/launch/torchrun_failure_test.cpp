#include "launch/torchrun_failure.h"

#include <gtest/gtest.h>

#include <csignal>

namespace bigmac::launch {
namespace {

// As torch 1.13's torchrun prints it (ChildFailedError), shortened.
constexpr const char* kSummary =
    R"(torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
/bin/trainer FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-29_12:06:43
  host      : localhost
  rank      : 1 (local_rank: 1)
  exitcode  : 3 (pid: 25721)
  error_file: <N/A>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-29_12:06:43
  host      : localhost
  rank      : 2 (local_rank: 0)
  exitcode  : -11 (pid: 25720)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
)";

TEST(TorchrunFailure, ReadsTheRootCauseBlock) {
  auto cause = parse_torchrun_root_cause(kSummary);
  ASSERT_TRUE(cause.has_value());
  EXPECT_EQ(cause->rank, 2);
  EXPECT_EQ(cause->local_rank, 0);
  EXPECT_EQ(cause->pid, 25720);
  EXPECT_EQ(cause->status.signal, SIGSEGV);
  EXPECT_EQ(cause->status.describe(), "killed by SIGSEGV");
}

TEST(TorchrunFailure, NoSummaryNoCause) {
  EXPECT_FALSE(parse_torchrun_root_cause("WARNING: something\n").has_value());
  EXPECT_FALSE(
      parse_torchrun_root_cause("Root Cause (first observed failure):\n[0]:\n").has_value());
}

TEST(TorchrunFailure, MissingLogDirectoryGivesNoLine) {
  EXPECT_EQ(torchrun_rank_error_line("/nonexistent/torchrun", 0), "");
}

}  // namespace
}  // namespace bigmac::launch
