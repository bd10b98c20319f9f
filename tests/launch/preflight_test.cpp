#include "launch/preflight.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "launch/launch_planner.h"
#include "launch/process_record.h"
#include "proc/pipe.h"
#include "proc/posix_process_runner.h"
#include "proc/process_table.h"
#include "testing/rank_harness.h"

namespace bigmac::launch {
namespace {

namespace fs = std::filesystem;

const std::string kRankProgram = std::string(BIGMAC_BIN_DIR) + "/bigmac-test-rank";

/// Listens on an ephemeral loopback port for as long as the test holds `sock`.
int listen_ephemeral(proc::Fd& sock) {
  sock.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  EXPECT_EQ(::bind(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(::listen(sock.get(), 1), 0);
  socklen_t len = sizeof addr;
  ::getsockname(sock.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  return ntohs(addr.sin_port);
}

class PreflightTest : public ::testing::Test {
 protected:
  void SetUp() override {
    run_dir_ = fs::temp_directory_path() /
               ("bigmac-preflight-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(run_dir_);
  }
  void TearDown() override { fs::remove_all(run_dir_); }

  LaunchPlan plan(int nproc, const std::string& devices = "cpu") {
    config::Config c;
    c.launch.nproc_per_node = nproc;
    c.launch.devices = devices;
    c.launch.master_port = testing::free_port();
    PlanInputs in;
    in.trainer_argv = {kRankProgram, "exit", "0"};
    in.log_dir = run_dir_ / "gate";
    in.visible_devices = {"0", "1", "2", "3"};
    auto p = plan_launch(c, in);
    EXPECT_TRUE(p);
    return *p;
  }

  PreflightOptions options() {
    PreflightOptions o;
    o.run_dir = run_dir_;
    o.devices = DeviceInventory{{"0", "1"}, "test"};
    return o;
  }

  static std::string all(const PreflightReport& r) { return r.render(); }

  fs::path run_dir_;
};

TEST_F(PreflightTest, CleanPlanPassesEveryCheck) {
  PreflightReport r = run_preflight(plan(2), options());
  EXPECT_TRUE(r.ok()) << all(r);
  EXPECT_EQ(r.passed, (std::vector<std::string>{"plan consistency", "master address", "master port",
                                                "leftovers", "disk", "open files", "trainer"}));
}

// Issue 30 item 16: 4,096 ranks ran out of descriptors 99 s into the gate. Preflight compares
// what the gate needs with the limit before anything starts.
TEST_F(PreflightTest, TooFewOpenFilesForTheRanksIsSaidWithBothNumbersBeforeLaunch) {
  LaunchPlan p = plan(16);
  const std::uint64_t need = descriptors_needed(p);
  EXPECT_EQ(need, 32u + 6u * 16u) << "builtin: five per process and the rank's log";
  PreflightOptions o = options();
  o.open_files = FileLimit{64, 64};
  PreflightReport r = run_preflight(p, o);
  ASSERT_EQ(r.problems.size(), 1u) << all(r);
  EXPECT_EQ(r.problems[0].kind, ErrorKind::kInfrastructure);
  EXPECT_NE(r.problems[0].message.find("needs about " + std::to_string(need) +
                                       " open files for its 16 ranks"),
            std::string::npos)
      << r.problems[0].message;
  EXPECT_NE(r.problems[0].message.find("ulimit -n 64, hard limit 64"), std::string::npos);
  EXPECT_NE(r.problems[0].hint.find("ulimit -Hn " + std::to_string(need)), std::string::npos);

  // A hard limit with room: the soft one is raised, and a note says so.
  o.open_files = FileLimit{64, 100000};
  r = run_preflight(p, o);
  EXPECT_TRUE(r.ok()) << all(r);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_EQ(r.notes.back(),
            "open files: the limit raised from 64 to " + std::to_string(need) + " for 16 ranks");
  o.open_files = FileLimit{std::nullopt, std::nullopt};
  EXPECT_TRUE(run_preflight(p, o).ok()) << "unlimited";
}

TEST_F(PreflightTest, TheOwnSoftLimitIsRaisedWhenTheHardOneAllows) {
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  const LaunchPlan p = plan(16);
  if (before.rlim_max != RLIM_INFINITY && before.rlim_max < descriptors_needed(p)) {
    GTEST_SKIP() << "hard limit " << before.rlim_max << " below the plan's need";
  }
  rlimit low = before;
  low.rlim_cur = 40;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  PreflightReport r = run_preflight(p, options());
  rlimit after{};
  ::getrlimit(RLIMIT_NOFILE, &after);
  ::setrlimit(RLIMIT_NOFILE, &before);
  EXPECT_TRUE(r.ok()) << all(r);
  EXPECT_EQ(after.rlim_cur, descriptors_needed(p));
}

TEST_F(PreflightTest, PortInUseNamesTheHolderPidAndCommand) {
  proc::Fd sock;
  LaunchPlan p = plan(2);
  p.master_port = listen_ephemeral(sock);
  for (RankAssignment& r : p.ranks) r.env["MASTER_PORT"] = std::to_string(p.master_port);
  PreflightReport r = run_preflight(p, options());
  ASSERT_EQ(r.problems.size(), 1u) << all(r);
  const Error& e = r.problems[0];
  EXPECT_EQ(e.key, "launch.master_port");
  EXPECT_EQ(e.kind, ErrorKind::kInfrastructure);
  EXPECT_NE(e.message.find("master port " + std::to_string(p.master_port) + " is in use"),
            std::string::npos)
      << e.message;
  EXPECT_NE(e.message.find("pid " + std::to_string(::getpid()) + " ("), std::string::npos)
      << e.message;
  EXPECT_NE(e.message.find("bigmac_launch_tests"), std::string::npos) << e.message;
}

TEST_F(PreflightTest, EveryProblemIsReportedAtOnce) {
  LaunchPlan p = plan(4, "cuda");
  p.master_addr = "no-such-host.invalid";
  for (RankAssignment& r : p.ranks) r.env["MASTER_ADDR"] = p.master_addr;
  p.ranks[3].device = p.ranks[2].device;
  p.ranks[1].env["WORLD_SIZE"] = "5";
  p.trainer_program = (run_dir_ / "missing-trainer").string();
  PreflightOptions o = options();
  o.min_free_bytes = std::uintmax_t{1} << 62;
  PreflightReport r = run_preflight(p, o);
  const std::string text = all(r);
  EXPECT_NE(text.find("rank 1 has WORLD_SIZE=5 but the plan has 4"), std::string::npos) << text;
  EXPECT_NE(text.find("master address 'no-such-host.invalid' does not resolve"), std::string::npos)
      << text;
  EXPECT_NE(text.find("4 processes per node need 4 GPUs, but 2 visible (from test)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ranks 2 and 3 on node 0 share device cuda:2"), std::string::npos) << text;
  EXPECT_NE(text.find("MiB free on"), std::string::npos) << text;
  EXPECT_NE(text.find("missing-trainer': no such file"), std::string::npos) << text;
  EXPECT_EQ(r.problems.size(), 6u) << text;
}

TEST_F(PreflightTest, CpuRunsSkipTheDeviceCheck) {
  PreflightOptions o = options();
  o.devices = DeviceInventory{{}, "none found"};
  EXPECT_TRUE(run_preflight(plan(4), o).ok());
}

TEST_F(PreflightTest, NonExecutableTrainerIsNamed) {
  LaunchPlan p = plan(1);
  p.trainer_program = (run_dir_ / "trainer.txt").string();
  { std::ofstream(p.trainer_program) << "not a program"; }
  PreflightReport r = run_preflight(p, options());
  ASSERT_EQ(r.problems.size(), 1u) << all(r);
  EXPECT_NE(r.problems[0].message.find("not an executable file"), std::string::npos);
}

TEST_F(PreflightTest, LeftoversOfAnEarlierRunAreFoundByTheirRecordedGroup) {
  proc::PosixProcessRunner earlier;
  proc::RankSpec spec;
  spec.argv = {kRankProgram, "hang-after"};
  auto pid = earlier.spawn(spec);
  ASSERT_TRUE(pid);
  ASSERT_TRUE(write_process_record(run_dir_ / kProcessRecordName,
                                   ProcessRecord{earlier.process_group(), earlier.pids()}));

  // The rank and its shepherd (the runner's copy of this process that watches it).
  PreflightReport r = run_preflight(plan(1), options());
  ASSERT_EQ(r.problems.size(), 2u) << all(r);
  EXPECT_NE(all(r).find("pid " + std::to_string(*pid) + " ("), std::string::npos) << all(r);
  EXPECT_NE(all(r).find("bigmac-test-rank hang-after"), std::string::npos) << all(r);
  EXPECT_NE(r.problems[0].hint.find("kill -TERM -- -" + std::to_string(earlier.process_group())),
            std::string::npos);

  earlier.terminate(std::chrono::milliseconds(5000), nullptr);
  EXPECT_TRUE(run_preflight(plan(1), options()).ok());
}

TEST_F(PreflightTest, UnreadableProcessRecordIsAProblem) {
  { std::ofstream(run_dir_ / kProcessRecordName) << "garbage"; }
  PreflightReport r = run_preflight(plan(1), options());
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].file, (run_dir_ / kProcessRecordName).string());
}

TEST(DeviceInventory, ParsesCudaVisibleDevices) {
  EXPECT_EQ(parse_cuda_visible_devices("0,2"), (std::vector<std::string>{"0", "2"}));
  EXPECT_EQ(parse_cuda_visible_devices(""), std::vector<std::string>{});
  EXPECT_EQ(parse_cuda_visible_devices("-1"), std::vector<std::string>{});
  EXPECT_EQ(parse_cuda_visible_devices("1,-1,2"), std::vector<std::string>{"1"});
  DeviceInventory inv = probe_devices(std::string("3,4"));
  EXPECT_EQ(inv.cuda_devices.size(), 2u);
  EXPECT_EQ(inv.source, "CUDA_VISIBLE_DEVICES");
}

}  // namespace
}  // namespace bigmac::launch
