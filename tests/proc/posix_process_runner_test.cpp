#include "proc/posix_process_runner.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include "proc/process_table.h"
#include "testing/rank_harness.h"

namespace bigmac::proc {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

const std::string kRankProgram = std::string(BIGMAC_BIN_DIR) + "/bigmac-test-rank";

/// Everything the runner reported, by rank.
struct Seen {
  std::map<int, std::string> out;
  std::map<int, std::string> err;
  std::map<int, RankExit> exits;
  std::size_t out_bytes = 0;

  OutputSink sink() {
    return [this](int rank, Stream stream, std::string_view bytes) {
      if (stream == Stream::kStdout) {
        out_bytes += bytes.size();
        // Keep only the head of a flood; the byte count proves the rest arrived.
        if (out[rank].size() < 4096) out[rank].append(bytes);
      } else {
        err[rank].append(bytes);
      }
    };
  }
};

class PosixProcessRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("bigmac-proc-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  RankSpec spec(int rank, std::vector<std::string> args) {
    RankSpec s;
    s.rank = rank;
    s.argv = {kRankProgram};
    s.argv.insert(s.argv.end(), args.begin(), args.end());
    s.stdout_path = dir_ / ("rank" + std::to_string(rank) + ".out");
    s.stderr_path = dir_ / ("rank" + std::to_string(rank) + ".err");
    return s;
  }

  /// Polls until `done` holds; the deadline is only a safety net for a broken runner.
  bool pump_until(ProcessRunner& runner, Seen& seen, const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(60);
    OutputSink sink = seen.sink();
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      for (const RankExit& e : runner.poll(milliseconds(200), sink).exited) seen.exits[e.rank] = e;
    }
    return true;
  }

  /// The process table after a test: nothing in the gate's group, no child of ours at all.
  static void expect_nothing_left(pid_t pgid) {
    ASSERT_NE(pgid, 0);
    for (const ProcessInfo& p : processes_in_group(pgid)) {
      ADD_FAILURE() << "left in group " << pgid << ": pid " << p.pid << " state " << p.state << " "
                    << p.command_line;
    }
    for (const ProcessInfo& p : children_of(::getpid())) {
      ADD_FAILURE() << "left as our child: pid " << p.pid << " state " << p.state << " "
                    << p.command_line;
    }
  }

  static std::string read(const fs::path& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  fs::path dir_;
};

TEST_F(PosixProcessRunnerTest, ReportsExitCodesAndKeepsStreamsApart) {
  PosixProcessRunner runner;
  ASSERT_TRUE(runner.spawn(spec(0, {"exit", "0"})));
  ASSERT_TRUE(runner.spawn(spec(1, {"exit", "3"})));
  Seen seen;
  ASSERT_TRUE(pump_until(runner, seen, [&] { return seen.exits.size() == 2; }));
  EXPECT_TRUE(seen.exits[0].status.success());
  EXPECT_EQ(seen.exits[1].status.exit_code, 3);
  EXPECT_EQ(seen.exits[1].status.describe(), "exit code 3");
  EXPECT_EQ(seen.out[1], "hello from rank 0\n");  // RANK is not set by the runner itself
  EXPECT_EQ(seen.err[1], "warning: about to fail\nerror: failing with 3\n");
  runner.terminate(milliseconds(1000), seen.sink());
  EXPECT_EQ(read(dir_ / "rank1.out"), "hello from rank 0\n");
  EXPECT_EQ(read(dir_ / "rank1.err"), "warning: about to fail\nerror: failing with 3\n");
  EXPECT_EQ(read(dir_ / "rank0.err"), "");
  expect_nothing_left(runner.process_group());
}

TEST_F(PosixProcessRunnerTest, AllRanksShareOneNewProcessGroup) {
  PosixProcessRunner runner;
  for (int r = 0; r < 3; ++r) ASSERT_TRUE(runner.spawn(spec(r, {"hang-after"})));
  pid_t pgid = runner.process_group();
  EXPECT_NE(pgid, ::getpgrp());
  for (pid_t pid : runner.pids()) {
    auto info = read_process(pid);
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(info->pgid, pgid);
  }
  Seen seen;
  runner.terminate(milliseconds(5000), seen.sink());
  expect_nothing_left(pgid);
}

TEST_F(PosixProcessRunnerTest, CrashIsReportedWithTheSignalName) {
  PosixProcessRunner runner;
  ASSERT_TRUE(runner.spawn(spec(0, {"signal", "SEGV"})));
  Seen seen;
  ASSERT_TRUE(pump_until(runner, seen, [&] { return seen.exits.size() == 1; }));
  EXPECT_EQ(seen.exits[0].status.signal, SIGSEGV);
  EXPECT_EQ(seen.exits[0].status.describe(), "killed by SIGSEGV");
  EXPECT_EQ(seen.out[0], "about to raise SEGV\n");
  runner.terminate(milliseconds(1000), seen.sink());
  expect_nothing_left(runner.process_group());
}

TEST_F(PosixProcessRunnerTest, HangingRanksAreStoppedWithSigterm) {
  PosixProcessRunner runner;
  ASSERT_TRUE(runner.spawn(spec(0, {"hang-before"})));
  ASSERT_TRUE(runner.spawn(spec(1, {"hang-after"})));
  Seen seen;
  ASSERT_TRUE(pump_until(
      runner, seen, [&] { return seen.out[0] == "starting\n" && seen.out[1] == "rendezvous\n"; }));
  EXPECT_EQ(runner.running(), 2u);
  std::vector<RankExit> exits = runner.terminate(milliseconds(30000), seen.sink());
  ASSERT_EQ(exits.size(), 2u);
  for (const RankExit& e : exits) EXPECT_EQ(e.status.signal, SIGTERM) << e.rank;
  EXPECT_EQ(runner.running(), 0u);
  expect_nothing_left(runner.process_group());
}

TEST_F(PosixProcessRunnerTest, RankIgnoringSigtermIsKilledAfterTheDeadline) {
  PosixProcessRunner runner;
  ASSERT_TRUE(runner.spawn(spec(0, {"ignore-term"})));
  Seen seen;
  ASSERT_TRUE(pump_until(runner, seen, [&] { return seen.out[0] == "ready\n"; }));
  std::vector<RankExit> exits = runner.terminate(milliseconds(100), seen.sink());
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].status.signal, SIGKILL);
  expect_nothing_left(runner.process_group());
}

TEST_F(PosixProcessRunnerTest, HundredMegabytesOfOutputDoNotStallTheRank) {
  PosixProcessRunner runner;
  ASSERT_TRUE(runner.spawn(spec(0, {"flood", "100"})));
  ASSERT_TRUE(runner.spawn(spec(1, {"exit", "0"})));
  Seen seen;
  ASSERT_TRUE(pump_until(runner, seen, [&] { return seen.exits.size() == 2; }));
  runner.terminate(milliseconds(1000), seen.sink());
  const std::size_t expected = 100u * 1024u * 1024u + std::string("hello from rank 0\n").size();
  EXPECT_EQ(seen.out_bytes, expected);
  EXPECT_EQ(fs::file_size(dir_ / "rank0.out"), 100u * 1024u * 1024u);
  EXPECT_EQ(seen.err[0], "flood done\n");
  EXPECT_TRUE(seen.exits[0].status.success());
  expect_nothing_left(runner.process_group());
}

TEST_F(PosixProcessRunnerTest, GrandchildIsRemovedWhenItsRankExits) {
  for (const char* where : {"group", "session"}) {
    SCOPED_TRACE(where);
    PosixProcessRunner runner;
    ASSERT_TRUE(runner.spawn(spec(0, {"grandchild", where})));
    Seen seen;
    ASSERT_TRUE(pump_until(runner, seen, [&] { return seen.exits.size() == 1; }));
    EXPECT_TRUE(seen.exits[0].status.success());
    ASSERT_EQ(seen.out[0].rfind("grandchild ", 0), 0u) << seen.out[0];
    const pid_t grandchild = std::stoi(seen.out[0].substr(11));
    // The shepherd removed it before it reported the rank's exit, wherever it had gone.
    EXPECT_FALSE(read_process(grandchild).has_value());
    runner.terminate(milliseconds(1000), seen.sink());
    expect_nothing_left(runner.process_group());
  }
}

TEST_F(PosixProcessRunnerTest, TeardownRemovesAChildThatLeftTheGroup) {
  PosixProcessRunner runner;
  ASSERT_TRUE(runner.spawn(spec(0, {"grandchild", "hang", "session"})));
  Seen seen;
  ASSERT_TRUE(
      pump_until(runner, seen, [&] { return seen.out[0].find('\n') != std::string::npos; }));
  const pid_t grandchild = std::stoi(seen.out[0].substr(11));
  ASSERT_TRUE(testing::wait_until(
      [&] {
        auto p = read_process(grandchild);
        return p && p->pgid != runner.process_group();
      },
      milliseconds(30000)))
      << "the grandchild never left the group";
  runner.terminate(milliseconds(5000), seen.sink());
  EXPECT_FALSE(read_process(grandchild).has_value());
  expect_nothing_left(runner.process_group());
}

TEST_F(PosixProcessRunnerTest, GrandchildOfAHangingRankIsRemovedWithIt) {
  PosixProcessRunner runner;
  ASSERT_TRUE(runner.spawn(spec(0, {"grandchild", "hang"})));
  Seen seen;
  ASSERT_TRUE(pump_until(runner, seen, [&] { return !seen.out[0].empty(); }));
  runner.terminate(milliseconds(5000), seen.sink());
  expect_nothing_left(runner.process_group());
}

TEST_F(PosixProcessRunnerTest, PassesEnvironmentAndWorkingDirectory) {
  PosixProcessRunner runner;
  RankSpec s = spec(0, {"env", "RANK", "BIGMAC_TEST_EXTRA"});
  s.env = {{"RANK", "5"}, {"BIGMAC_TEST_EXTRA", "a b"}};
  s.working_dir = dir_;
  ASSERT_TRUE(runner.spawn(s));
  Seen seen;
  ASSERT_TRUE(pump_until(runner, seen, [&] { return seen.exits.size() == 1; }));
  runner.terminate(milliseconds(1000), seen.sink());
  EXPECT_EQ(seen.out[0],
            "RANK=5\nBIGMAC_TEST_EXTRA=a b\ncwd=" + fs::canonical(dir_).string() + "\n");
}

TEST_F(PosixProcessRunnerTest, RanksDieWithTheOrchestrator) {
  PosixProcessRunner runner;
  ASSERT_TRUE(runner.spawn(spec(0, {"pdeathsig"})));
  Seen seen;
  ASSERT_TRUE(pump_until(runner, seen, [&] { return seen.exits.size() == 1; }));
  runner.terminate(milliseconds(1000), seen.sink());
  EXPECT_EQ(seen.out[0], "pdeathsig=" + std::to_string(SIGKILL) + "\n");
}

TEST_F(PosixProcessRunnerTest, RankAndItsEscapedChildDieWhenTheOrchestratorIsKilled) {
  // A real orchestrator process whose rank starts a child in a session of its own (as torch 2's
  // torchrun does with its workers), killed by SIGKILL: no teardown code of it runs.
  testing::RankHarness harness;
  const fs::path rank_out = dir_ / "rank.out";
  harness.spawn({std::string(BIGMAC_BIN_DIR) + "/bigmac-test-orchestrator", rank_out.string(),
                 kRankProgram, "grandchild", "hang", "session"},
                {}, dir_ / "orchestrator.out", dir_ / "orchestrator.err");
  pid_t shepherd = 0;
  pid_t grandchild = 0;
  ASSERT_TRUE(testing::wait_until(
      [&] {
        const std::string o = read(dir_ / "orchestrator.out");
        const std::string r = read(rank_out);
        if (o.find('\n') == std::string::npos || r.find('\n') == std::string::npos) return false;
        shepherd = std::stoi(o.substr(5));
        grandchild = std::stoi(r.substr(11));
        return true;
      },
      milliseconds(30000)))
      << read(dir_ / "orchestrator.err");
  const std::vector<ProcessInfo> ranks = children_of(shepherd);
  ASSERT_EQ(ranks.size(), 1u);
  const pid_t rank = ranks[0].pid;
  const pid_t group = read_process(shepherd)->pgid;
  ASSERT_NE(read_process(grandchild)->pgid, group);

  harness.signal_all(SIGKILL);
  ASSERT_TRUE(harness.wait_all(milliseconds(30000)));
  auto gone = [](pid_t pid) {
    auto p = read_process(pid);
    return !p || p->zombie();
  };
  const bool all_gone = testing::wait_until(
      [&] {
        // The shepherd is re-parented to us when this process is a subreaper: reap it then.
        ::waitpid(shepherd, nullptr, WNOHANG);
        return gone(shepherd) && gone(rank) && gone(grandchild);
      },
      milliseconds(30000));
  for (pid_t pid : {grandchild, rank, shepherd}) {
    if (!gone(pid)) ::kill(pid, SIGKILL);  // do not leak them when the check fails
  }
  ASSERT_TRUE(all_gone) << "shepherd " << gone(shepherd) << " rank " << gone(rank) << " grandchild "
                        << gone(grandchild);
  ::waitpid(shepherd, nullptr, WNOHANG);
  // A zombie whose parent is an init that does not reap is dead all the same.
  for (const ProcessInfo& p : processes_in_group(group)) {
    if (!p.zombie()) ADD_FAILURE() << "left in group " << group << ": pid " << p.pid;
  }
}

TEST_F(PosixProcessRunnerTest, MissingProgramIsAnErrorNotAnExitCode) {
  PosixProcessRunner runner;
  RankSpec s = spec(2, {});
  s.argv = {(dir_ / "no-such-trainer").string()};
  auto pid = runner.spawn(s);
  ASSERT_FALSE(pid);
  EXPECT_EQ(pid.error().kind, ErrorKind::kInfrastructure);
  EXPECT_NE(pid.error().message.find("rank 2"), std::string::npos) << pid.error().message;
  EXPECT_NE(pid.error().message.find("no such file"), std::string::npos) << pid.error().message;

  s.argv = {"bigmac-no-such-program-anywhere"};
  auto in_path = runner.spawn(s);
  ASSERT_FALSE(in_path);
  EXPECT_NE(in_path.error().message.find("not found in PATH"), std::string::npos);

  s.argv = {kRankProgram, "exit", "0"};
  s.working_dir = dir_ / "missing-dir";
  auto bad_dir = runner.spawn(s);
  ASSERT_FALSE(bad_dir);
  EXPECT_NE(bad_dir.error().message.find("missing-dir"), std::string::npos);
  EXPECT_TRUE(children_of(::getpid()).empty());
}

TEST_F(PosixProcessRunnerTest, DestructorLeavesNothingBehind) {
  pid_t pgid = 0;
  {
    PosixProcessRunner runner;
    ASSERT_TRUE(runner.spawn(spec(0, {"ignore-term"})));
    ASSERT_TRUE(runner.spawn(spec(1, {"grandchild", "hang"})));
    pgid = runner.process_group();
  }
  expect_nothing_left(pgid);
}

}  // namespace
}  // namespace bigmac::proc
