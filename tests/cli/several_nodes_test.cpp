// End-to-end on several nodes: `run-all` through the real srun of a two-node Slurm 22.05
// cluster (scripts/slurm-cluster, started and stopped by CTest's slurm_cluster fixture; its
// slurm.conf is in $SLURM_CONF), and through two real torchrun agents on this host.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "testing/rank_harness.h"
#include "testing/run_program.h"

namespace {

using bigmac::testing::ProgramResult;
using bigmac::testing::run_program;
using bigmac::testing::wait_until;
using ::testing::HasSubstr;
namespace fs = std::filesystem;
using std::chrono::milliseconds;

const std::string kBinary = std::string(BIGMAC_BIN_DIR) + "/bigmac-bringup";
const std::string kDemo = std::string(BIGMAC_SOURCE_DIR) + "/configs/demo.toml";
const std::string kTorchTrainer = std::string(BIGMAC_SOURCE_DIR) + "/configs/torch-trainer.toml";

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

/// A run directory and a port of its own per test, and run-all on the demo.
class SeveralNodes : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("bigmac-nodes-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(root_);
  }

  virtual std::vector<std::string> layout_sets() const = 0;

  std::vector<std::string> argv_of(const std::string& config, std::vector<std::string> extra,
                                   const std::vector<std::string>& sets) const {
    // The first gate's run is the reference: no stored baseline.
    std::vector<std::string> argv = {
        kBinary, "run-all", "-c", config, "--run-dir", (root_ / "run").string(), "--no-baseline"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::vector<std::string> all = {
        "launch.master_port=" + std::to_string(port_), "launch.stall_timeout_s=30",
        "launch.init_timeout_s=30",
        "trainer.binary=" + std::string(BIGMAC_BIN_DIR) + "/bigmac-train"};
    for (const std::string& s : layout_sets()) all.push_back(s);
    for (const std::string& s : sets) all.push_back(s);
    for (const std::string& s : all) {
      argv.push_back("--set");
      argv.push_back(s);
    }
    return argv;
  }

  /// run-all to the end, from the repository root (example configs name scripts from there).
  ProgramResult bringup(const std::string& config, std::vector<std::string> extra = {},
                        const std::vector<std::string>& sets = {}) const {
    return run_program(argv_of(config, std::move(extra), sets), {}, BIGMAC_SOURCE_DIR);
  }

  nlohmann::json state() const {
    return nlohmann::json::parse(slurp(root_ / "run" / "state.json"));
  }

  std::string gate_field(const std::string& gate, const std::string& field) const {
    const nlohmann::json s = state();  // the loop below must not outlive it
    for (const auto& g : s.at("gates")) {
      if (g.at("id") == gate) return g.value(field, "");
    }
    return "missing";
  }

  fs::path attempt(const std::string& name) const { return root_ / "run" / name; }

  /// rank -> node from an attempt's result.json.
  std::map<int, std::string> nodes_of(const std::string& attempt_name) const {
    std::map<int, std::string> nodes;
    const auto result = nlohmann::json::parse(slurp(attempt(attempt_name) / "result.json"));
    for (const auto& r : result.at("ranks")) nodes[r.at("rank")] = r.value("node", "");
    return nodes;
  }

  /// Processes whose command line names this test's run directory (ranks left behind).
  std::vector<pid_t> leftovers() const {
    std::vector<pid_t> found;
    const std::string needle = (root_ / "run").string();
    for (const auto& entry : fs::directory_iterator("/proc")) {
      const std::string name = entry.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      const std::string cmdline = slurp(entry.path() / "cmdline");
      const pid_t pid = std::stoi(name);
      if (cmdline.find(needle) != std::string::npos && bigmac::testing::process_state(pid) != 'Z') {
        found.push_back(pid);
      }
    }
    return found;
  }

  fs::path root_;
  int port_ = bigmac::testing::free_port();
};

// ---------------------------------------------------------------------------------------------
// Slurm: two nodes (n1, n2) x two ranks each
// ---------------------------------------------------------------------------------------------

class SlurmCluster : public SeveralNodes {
 protected:
  void SetUp() override {
    const char* conf = std::getenv("SLURM_CONF");
    ASSERT_TRUE(conf != nullptr && fs::exists(conf))
        << "no cluster: run through ctest, whose slurm_cluster fixture starts "
           "scripts/slurm-cluster and sets SLURM_CONF";
    SeveralNodes::SetUp();
  }
  void TearDown() override {
    // Whatever the test did, no task of it may be left in the queue or on the host.
    EXPECT_TRUE(wait_until([&] { return queue_empty(); }, milliseconds(240000))) << squeue();
    EXPECT_TRUE(wait_until([&] { return leftovers().empty(); }, milliseconds(30000)));
    SeveralNodes::TearDown();
  }
  std::vector<std::string> layout_sets() const override {
    return {"launch.launcher=slurm", "launch.nnodes=2", "launch.nproc_per_node=2"};
  }

  static std::string squeue() {
    return run_program({"/usr/bin/squeue", "-h", "-s", "-o", "%i %j %N"}).out;
  }
  static bool queue_empty() {
    ProgramResult r = run_program({"/usr/bin/squeue", "-h", "-o", "%i"});
    return r.exit_code == 0 && r.out.find_first_not_of(" \n") == std::string::npos;
  }
  static std::string node_state(const std::string& node) {
    std::string out = run_program({"/usr/bin/sinfo", "-h", "-N", "-n", node, "-o", "%t"}).out;
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  }

  /// run-all in the background; returns once the attempt's rank 0 logged a step, which needs
  /// every rank of the gate in its training loop (data parallel: one all-reduce per step).
  void start_until_stepping(bigmac::testing::RankHarness& harness, const std::string& config,
                            const std::string& attempt_name, const std::vector<std::string>& sets) {
    harness.spawn(argv_of(config, {}, sets), {}, root_ / "out.txt", root_ / "err.txt");
    const bool stepping = wait_until(
        [&] {
          return slurp(attempt(attempt_name) / "rank0.log").find("\"ev\":\"step\"") !=
                 std::string::npos;
        },
        milliseconds(300000));
    ASSERT_TRUE(stepping) << attempt_name << " never stepped\n"
                          << slurp(root_ / "out.txt") << slurp(root_ / "err.txt");
  }
};

TEST_F(SlurmCluster, DemoPassesAllFiveGatesOnTwoNodes) {
  ProgramResult r = bringup(kDemo);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* gate : {"single", "dp", "pp2", "shapes", "target"}) {
    EXPECT_EQ(gate_field(gate, "status"), "passed") << gate;
  }
  // dp and target span both nodes, two ranks each; srun placed them, the wrapper said where.
  const std::map<int, std::string> expected = {{0, "n1"}, {1, "n1"}, {2, "n2"}, {3, "n2"}};
  EXPECT_EQ(nodes_of("02-dp.1"), expected);
  EXPECT_EQ(nodes_of("05-target.1"), expected);
  const std::string plan = slurp(attempt("05-target.1") / "launch-plan.json");
  EXPECT_THAT(plan, HasSubstr("\"--ntasks-per-node=2\""));
  EXPECT_THAT(plan, HasSubstr("bigmac-rank-env"));
}

TEST_F(SlurmCluster, InsideAnAllocationEachGateIsAStepOfIt) {
  // salloc holds the allocation and runs run-all with SLURM_JOB_ID set, as sbatch would.
  std::vector<std::string> argv = {"/usr/bin/salloc", "--nodes=2", "--ntasks-per-node=2",
                                   "--job-name=bigmac-test-allocation"};
  const std::vector<std::string> bringup_argv = argv_of(kDemo, {"--until", "dp"}, {});
  argv.insert(argv.end(), bringup_argv.begin(), bringup_argv.end());
  ProgramResult r = run_program(argv, {}, BIGMAC_SOURCE_DIR);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(gate_field("dp", "status"), "passed");
  const nlohmann::json plan = nlohmann::json::parse(slurp(attempt("02-dp.1") / "launch-plan.json"));
  EXPECT_TRUE(plan.at("slurm").at("inside_allocation").get<bool>()) << plan.dump(2);
  EXPECT_FALSE(plan.at("slurm").at("job_id").get<std::string>().empty());
  // The first node of the allocation is the master; every rank found its node.
  EXPECT_EQ(plan.at("master_addr"), "n1");
  EXPECT_EQ(nodes_of("02-dp.1"),
            (std::map<int, std::string>{{0, "n1"}, {1, "n1"}, {2, "n2"}, {3, "n2"}}));
}

TEST_F(SlurmCluster, PythonExamplePassesUnderSlurmTorchrun) {
  ProgramResult r =
      bringup(kTorchTrainer, {}, {"launch.launcher=slurm+torchrun", "launch.init_timeout_s=90"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* gate : {"single", "dp", "pp2", "shapes", "target"}) {
    EXPECT_EQ(gate_field(gate, "status"), "passed") << gate;
  }
  // One torchrun agent per node; c10d numbered them, the workers said where they ran.
  std::multiset<std::string> nodes;
  for (const auto& [rank, node] : nodes_of("05-target.1")) nodes.insert(node);
  EXPECT_EQ(nodes, (std::multiset<std::string>{"n1", "n1", "n2", "n2"}));
  EXPECT_THAT(slurp(attempt("05-target.1") / "launch-plan.json"), HasSubstr("c10d"));
}

TEST_F(SlurmCluster, RankAbortingAtStep3StopsSingleOnNodeN1) {
  ProgramResult r = bringup(kDemo, {"-v"}, {"faults.crash_rank=0:3"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(gate_field("single", "status"), "failed");
  EXPECT_EQ(gate_field("single", "failed_check"), "exit_status");
  const std::string verdict = slurp(attempt("01-single.1") / "verdict.json");
  EXPECT_THAT(verdict, HasSubstr("rank 0: killed by SIGABRT on node n1"));
  // srun's own account of it was read, and is not mistaken for the rank's words.
  EXPECT_THAT(r.out, HasSubstr("rank 0 on n1"));
}

TEST_F(SlurmCluster, HungRankStopsDpNamingNodeN2) {
  ProgramResult r = bringup(kDemo, {}, {"faults.hang_rank=3:2", "launch.stall_timeout_s=10"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(gate_field("single", "status"), "passed");
  EXPECT_EQ(gate_field("dp", "status"), "failed");
  EXPECT_EQ(gate_field("dp", "failed_check"), "exit_status");
  EXPECT_THAT(slurp(attempt("02-dp.1") / "verdict.json"), HasSubstr("rank 3: stalled"));
  EXPECT_EQ(nodes_of("02-dp.1").at(3), "n2");
  EXPECT_THAT(slurp(attempt("02-dp.1") / "verdict.json"), HasSubstr("on node n2"));
}

TEST_F(SlurmCluster, WrongMasterPortStopsDpNamingNodeN2) {
  ProgramResult r =
      bringup(kDemo, {}, {"faults.master_port_offset=3:1", "launch.init_timeout_s=15"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(gate_field("single", "status"), "passed");
  EXPECT_EQ(gate_field("dp", "status"), "failed");
  EXPECT_EQ(gate_field("dp", "failed_check"), "exit_status");
  // Rank 3 gives up connecting to the wrong port (c10d's client timeout) and says so.
  const std::string verdict = slurp(attempt("02-dp.1") / "verdict.json");
  EXPECT_THAT(verdict, HasSubstr("first: rank 3: exit 1 on node n2"));
  EXPECT_THAT(verdict, HasSubstr("stderr: bigmac-train: rank 3: error:"));
}

TEST_F(SlurmCluster, FailedRanksOwnErrorLinesAreTheEvidenceAndDiagnosedFirst) {
  // bf16 activations at the pipeline cut: stage 1 names the mismatch on its stderr and exits 1.
  ProgramResult r = bringup(kDemo, {"--until", "pp2"}, {"faults.boundary_dtype=bf16"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(gate_field("pp2", "status"), "failed");
  EXPECT_EQ(gate_field("pp2", "failed_check"), "exit_status");
  const nlohmann::json verdict = nlohmann::json::parse(slurp(attempt("03-pp2.1") / "verdict.json"));
  const std::string text = verdict.dump();
  // The line as the rank wrote it: srun's "1: " label gone, nothing of srun's own in front.
  EXPECT_THAT(text, HasSubstr("stderr: "));
  EXPECT_THAT(text, HasSubstr("pipeline boundary stage 0 -> stage 1"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("stderr: 1: ")));
  const nlohmann::json diagnoses =
      nlohmann::json::parse(slurp(attempt("03-pp2.1") / "diagnosis.json"));
  ASSERT_FALSE(diagnoses.empty()) << r.out;
  EXPECT_EQ(diagnoses.at(0).at("id"), "pipeline_boundary_mismatch") << diagnoses.dump(2);
}

/// Keeps dp running until the test acts, however fast or slow this machine is: rank 3 blocks
/// at step 5, the others wait in their all-reduce (its timeout is init_timeout_s), and the
/// watchdog would wait 10 minutes.
const std::vector<std::string> kHeldAtStep5 = {"faults.hang_rank=3:5", "launch.stall_timeout_s=600",
                                               "launch.init_timeout_s=600"};

TEST_F(SlurmCluster, NodeSetDownMidGateIsDiagnosedAsANodeFailure) {
  bigmac::testing::RankHarness harness;
  start_until_stepping(harness, kDemo, "02-dp.1", kHeldAtStep5);
  ProgramResult down = run_program(
      {"/usr/bin/scontrol", "update", "nodename=n2", "state=down", "reason=bigmac-bringup test"});
  ASSERT_EQ(down.exit_code, 0) << down.err;
  ASSERT_TRUE(harness.wait_all(milliseconds(120000)));
  EXPECT_EQ(harness.end(0)->code, 1);
  const std::string out = slurp(root_ / "out.txt");
  EXPECT_EQ(gate_field("dp", "status"), "failed") << out;
  EXPECT_THAT(out, HasSubstr("node n2 failed"));
  const nlohmann::json diagnoses =
      nlohmann::json::parse(slurp(attempt("02-dp.1") / "diagnosis.json"));
  ASSERT_FALSE(diagnoses.empty()) << out;
  EXPECT_EQ(diagnoses.at(0).at("class"), "node_failure") << diagnoses.dump(2);
  EXPECT_THAT(diagnoses.at(0).dump(), HasSubstr("n2"));
  const nlohmann::json result = nlohmann::json::parse(slurp(attempt("02-dp.1") / "result.json"));
  EXPECT_TRUE(result.at("ranks").at(3).value("node_failed", false)) << result.dump(2);
  // Back to service for the next test, once Slurm has cleaned up the failed job: slurmd
  // re-registers the node (ReturnToService=2), or we resume it.
  EXPECT_TRUE(wait_until([] { return queue_empty(); }, milliseconds(300000))) << squeue();
  // In service again: idle, or running another test's job already (mix, alloc: CTest runs
  // the Slurm tests beside each other).
  const auto in_service = [] {
    const std::string state = node_state("n2");
    return state == "idle" || state == "mix" || state == "alloc";
  };
  if (!wait_until(in_service, milliseconds(30000))) {
    run_program({"/usr/bin/scontrol", "update", "nodename=n2", "state=resume"});
  }
  EXPECT_TRUE(wait_until(in_service, milliseconds(300000))) << node_state("n2");
}

TEST_F(SlurmCluster, CtrlCLeavesNoTaskRunning) {
  bigmac::testing::RankHarness harness;
  start_until_stepping(harness, kDemo, "02-dp.1", kHeldAtStep5);
  EXPECT_FALSE(queue_empty());
  harness.signal_all(SIGINT);
  ASSERT_TRUE(harness.wait_all(milliseconds(60000)));
  EXPECT_EQ(harness.end(0)->code, 130);
  EXPECT_EQ(state().at("phase"), "interrupted");
  EXPECT_TRUE(wait_until([] { return queue_empty(); }, milliseconds(60000))) << squeue();
  EXPECT_TRUE(wait_until([&] { return leftovers().empty(); }, milliseconds(30000)));
}

TEST_F(SlurmCluster, SigkillOfTheOrchestratorLeavesNoTaskRunning) {
  // The ranks of a Slurm job are children of slurmstepd, out of the orchestrator's reach, and a
  // SIGKILLed srun leaves its step running for minutes. The rank shepherd outlives the
  // orchestrator: it gives srun SIGTERM, and srun ends the step on both nodes (issue 20).
  bigmac::testing::RankHarness harness;
  start_until_stepping(harness, kDemo, "02-dp.1", kHeldAtStep5);
  harness.signal_all(SIGKILL);
  ASSERT_TRUE(harness.wait_all(milliseconds(20000)));
  const bool ended = wait_until([] { return queue_empty(); }, milliseconds(120000));
  if (!ended) {
    // Do not leave the job to block the next test.
    std::istringstream ids(run_program({"/usr/bin/squeue", "-h", "-o", "%i"}).out);
    for (std::string id; ids >> id;) run_program({"/usr/bin/scancel", "--full", id});
  }
  EXPECT_TRUE(ended) << squeue();
  EXPECT_TRUE(wait_until([&] { return leftovers().empty(); }, milliseconds(30000)));
}

TEST_F(SlurmCluster, PreflightReportsEveryProblemAtOnce) {
  // The master port held here (the first node is this host), and more CPUs per node than
  // the nodes have.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port_));
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  ProgramResult r = bringup(kDemo, {"--until", "single"}, {"launch.threads_per_rank=16"});
  ::close(fd);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  const std::string all = r.out + r.err;
  EXPECT_THAT(all, HasSubstr("16 CPUs"));
  EXPECT_THAT(all, HasSubstr("master port " + std::to_string(port_) + " is in use"));
}

// ---------------------------------------------------------------------------------------------
// torchrun: two agents on this host, --nnodes 2, c10d rendezvous
// ---------------------------------------------------------------------------------------------

class TorchrunAgents : public SeveralNodes {
 protected:
  void SetUp() override {
    if (!fs::exists("/usr/bin/torchrun")) GTEST_SKIP() << "python3-torch's torchrun is missing";
    SeveralNodes::SetUp();
  }
  std::vector<std::string> layout_sets() const override {
    return {"launch.launcher=torchrun", "launch.nnodes=2", "launch.nproc_per_node=2",
            "launch.init_timeout_s=90"};
  }
};

TEST_F(TorchrunAgents, TwoAgentsOnOneHostPassDp) {
  ProgramResult r = bringup(kDemo, {"--until", "dp"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(gate_field("dp", "status"), "passed");
  const std::string plan = slurp(attempt("02-dp.1") / "launch-plan.json");
  EXPECT_THAT(plan, HasSubstr("c10d"));
  EXPECT_THAT(plan, HasSubstr("torchrun-node1"));
  // Each worker wrote its own output files and said where it ran.
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  for (const auto& [rank, node] : nodes_of("02-dp.1")) EXPECT_EQ(node, host) << rank;
  EXPECT_TRUE(fs::exists(attempt("02-dp.1") / "rank3.stderr"));
  EXPECT_TRUE(leftovers().empty());
}

}  // namespace
