// End-to-end: a verdict as soon as it is certain. Faults of the built-in trainer that a baseline
// comparison catches stop their gate at the step that decided it; a hung rank is stopped at the
// adaptive limit and named (the one that stopped first, not the ones waiting for it); two runs
// on one master port end in an infrastructure error, not a failed gate.

#include "run_all_fixture.h"

namespace {

using namespace bigmac::testing::e2e;

class EarlyVerdict : public RunAll {
 protected:
  nlohmann::json verdict(const std::string& attempt_dir) const {
    std::ifstream in(root_ / "run" / attempt_dir / "verdict.json");
    return nlohmann::json::parse(in);
  }

  /// The highest global_step in a rank log of an attempt (-1: none).
  long last_step(const std::string& attempt_dir, int rank) const {
    std::ifstream in(root_ / "run" / attempt_dir / ("rank" + std::to_string(rank) + ".log"));
    long last = -1;
    for (std::string line; std::getline(in, line);) {
      if (line.find("\"ev\":\"step\"") == std::string::npos) continue;
      last = std::max(last, static_cast<long>(nlohmann::json::parse(line).at("global_step")));
    }
    return last;
  }
};

struct DivergenceRow {
  std::string name;
  std::vector<std::string> sets;
  std::string gate;
  std::string attempt_dir;
  std::string check;
  int loss_rank;  ///< the rank that logs the steps
};

void PrintTo(const DivergenceRow& row, std::ostream* os) { *os << row.name; }

class DivergenceStopsEarly : public EarlyVerdict,
                             public ::testing::WithParamInterface<DivergenceRow> {};

TEST_P(DivergenceStopsEarly, AtTheStepThatDecidedIt) {
  const DivergenceRow& row = GetParam();
  ProgramResult r = bringup(run_args(), row.sets);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(gate_field(row.gate, "failed_check"), row.check) << r.out;
  const nlohmann::json v = verdict(row.attempt_dir);
  const std::string stopped = v.value("stopped_early", "");
  EXPECT_THAT(stopped, HasSubstr("stopped early "));
  EXPECT_THAT(stopped, HasSubstr(" of 20: " + row.check + " failed for good"));
  EXPECT_THAT(r.out, HasSubstr(stopped));
  long certain_at = -2;
  for (const auto& c : v.at("checks")) {
    if (c.at("name") == row.check) certain_at = c.value("certain_at", -2L);
  }
  ASSERT_GE(certain_at, -1) << v.dump(2);
  // Judged on the records so far: the ranks were stopped, long before step 19.
  const long last = last_step(row.attempt_dir, row.loss_rank);
  EXPECT_GE(last, certain_at);
  EXPECT_LT(last, 19) << "the gate ran to the end";
  // A check that failed only because the run was cut is not judged.
  for (const auto& c : v.at("checks")) {
    EXPECT_TRUE(c.at("passed").get<bool>() || c.contains("certain_at")) << c.dump();
  }
}

// The fault matrix rows that a baseline comparison catches.
INSTANTIATE_TEST_SUITE_P(BaselineFaults, DivergenceStopsEarly,
                         ::testing::Values(DivergenceRow{"lr_scale_by_world",
                                                         {"faults.lr_scale_by_world=true"},
                                                         "dp",
                                                         "02-dp.1",
                                                         "lr_vs_baseline",
                                                         0},
                                           DivergenceRow{"ragged_microbatch",
                                                         {"faults.ragged_microbatch=true"},
                                                         "dp",
                                                         "02-dp.1",
                                                         "sample_coverage",
                                                         0},
                                           DivergenceRow{"accum_not_rescaled",
                                                         {"gates.dp.rescale=\"none\""},
                                                         "dp",
                                                         "02-dp.1",
                                                         "samples_per_step",
                                                         0},
                                           DivergenceRow{"untied_sync",
                                                         {"faults.untied_sync=true"},
                                                         "pp2",
                                                         "03-pp2.1",
                                                         "grad_norm_vs_baseline",
                                                         1}),
                         [](const ::testing::TestParamInfo<DivergenceRow>& row) {
                           return row.param.name;
                         });

TEST_F(EarlyVerdict, StopOnDivergenceFalseRunsTheGateToTheEnd) {
  ProgramResult r =
      bringup(run_args(), {"faults.lr_scale_by_world=true", "gates.dp.stop_on_divergence=false"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(gate_field("dp", "failed_check"), "lr_vs_baseline");
  EXPECT_EQ(verdict("02-dp.1").value("stopped_early", "?"), "");
  EXPECT_EQ(last_step("02-dp.1", 0), 19);
}

TEST_F(EarlyVerdict, AHungRankIsNamedAtTheAdaptiveLimitOfTheDefaults) {
  // hang_rank=1:2: rank 1 never begins step 2; ranks 0, 2, 3 begin it and block in the
  // all-reduce. Default limits: max(stall_min_s 5 s, 10 × median step), capped at 60 s.
  ProgramResult r = bringup(run_args(), {"faults.hang_rank=1:2", "launch.stall_timeout_s=60",
                                         "launch.stall_min_s=5", "launch.stall_factor=10"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(gate_field("dp", "failed_check"), "exit_status");
  const nlohmann::json v = verdict("02-dp.1");
  std::string exit_message;
  for (const auto& c : v.at("checks")) {
    if (c.at("name") == "exit_status") exit_message = c.at("message");
  }
  EXPECT_THAT(exit_message, HasSubstr("first: rank 1: stalled (rank 1 stalled after step 1"));
  // Its limit and how it was derived (the step time depends on the machine's load).
  EXPECT_THAT(exit_message, HasSubstr(" s: max(stall_min_s 5 s, 10 × median step "));
  // The card names the rank the stall list names first (it named rank 0, 3 runs of 3).
  std::ifstream file(root_ / "run" / "02-dp.1" / "diagnosis.json");
  const nlohmann::json diagnoses = nlohmann::json::parse(file);
  ASSERT_FALSE(diagnoses.empty());
  // bigmac-train's collective ledger places it: it never reached the all-reduce the others
  // are in (the silence alone gave rank_stalled).
  EXPECT_EQ(diagnoses.front().at("id"), "rank_behind_collective") << diagnoses.dump(1);
  EXPECT_EQ(diagnoses.front().at("failed_rank"), 1) << diagnoses.dump(1);
  EXPECT_THAT(r.out, HasSubstr("Symptom:    rank 1 made no progress for "));
  EXPECT_THAT(r.out, HasSubstr("it never reached all_reduce #"));
}

TEST_F(EarlyVerdict, AStalledStageIsNamedBeforeTheStageWaitingForIt) {
  ProgramResult r = bringup(run_args(), {"faults.stage_stall=1:3", "launch.stall_timeout_s=60",
                                         "launch.stall_min_s=5", "launch.stall_factor=10"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(gate_field("pp2", "failed_check"), "exit_status");
  EXPECT_THAT(r.out, HasSubstr("first: rank 1: stalled (rank 1 stalled after step 2 (stage 1)"));
}

TEST_F(EarlyVerdict, TwoRunsOnOnePortEndInAnInfrastructureErrorOrMoveWhenAllowed) {
  // Run A holds the port: its dp gate hangs (rank 1 at step 2) under a 120 s stall limit (and
  // a 120 s Gloo timeout, which bigmac-train takes from init_timeout_s).
  bigmac::testing::RankHarness a;
  start_until_running(a, "dp",
                      {"faults.hang_rank=1:2", "launch.stall_timeout_s=120",
                       "launch.stall_min_s=120", "launch.init_timeout_s=120"});
  // Run B, in another directory on the same port, passes single (one process needs no port)
  // and cannot run dp: exit 3, an infrastructure error naming run A.
  const fs::path other = root_ / "other";
  const std::vector<std::string> b = {"-c", kDemo, "--no-baseline"};
  std::vector<std::string> run_b = {"run-all", "--run-dir", other.string(), "--until", "dp"};
  run_b.insert(run_b.end(), b.begin(), b.end());
  ProgramResult refused = bringup(run_b);
  EXPECT_EQ(refused.exit_code, 3) << refused.out << refused.err;
  EXPECT_THAT(refused.out + refused.err,
              HasSubstr("master port " + std::to_string(port_) +
                        " is taken by another bigmac-bringup run on this machine: pid " +
                        std::to_string(a.pid(0))));
  // Allowed to move, it takes the next free port and passes.
  std::vector<std::string> dp_b = {"run", "dp", "--run-dir", other.string()};
  dp_b.insert(dp_b.end(), b.begin(), b.end());
  ProgramResult moved = bringup(dp_b, {"launch.pick_free_port=true"});
  EXPECT_EQ(moved.exit_code, 0) << moved.out << moved.err;
  EXPECT_THAT(moved.out, HasSubstr("(launch.pick_free_port)"));
  EXPECT_EQ(gate_status("dp"), "running") << "run A held the port all along";
  a.signal_all(SIGINT);
  ASSERT_TRUE(a.wait_all(std::chrono::milliseconds(60000)));
  EXPECT_EQ(a.end(0)->code, 130);
}

TEST_F(EarlyVerdict, APortTakenBetweenPreflightAndTheBindIsAnInfrastructureError) {
  const std::string script =
      std::string(BIGMAC_SOURCE_DIR) + "/tests/cli/fixtures/port_taken_trainer.py";
  const std::string train = std::string(BIGMAC_BIN_DIR) + "/bigmac-train";
  ProgramResult r = bringup(
      run_args(), {"trainer.kind=\"command\"",
                   "trainer.command=[\"/usr/bin/python3\", \"" + script + "\", \"" + train +
                       "\", \"--config\", \"{gate_config}\", \"--log-file\", \"{log_file}\"]"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_EQ(gate_status("single"), "passed");
  // Not failed: nothing of the trainer was judged; aborted by the infrastructure (issue 18's
  // gate status), so `resume` runs it again.
  EXPECT_EQ(gate_status("dp"), "aborted") << r.out;
  EXPECT_THAT(gate_field("dp", "note"), HasSubstr("master port collision"));
  EXPECT_EQ(state().at("phase"), "infrastructure");
  // Decided before the attempt was persisted: its folder holds how the ranks ended and the
  // diagnosis, and no verdict, as the run's aborted gate says.
  const fs::path attempt = root_ / "run" / "02-dp.1";
  EXPECT_TRUE(fs::exists(attempt / "result.json"));
  EXPECT_TRUE(fs::exists(attempt / "diagnosis.json"));
  EXPECT_FALSE(fs::exists(attempt / "verdict.json"));
  EXPECT_TRUE(leftovers().empty());
}

}  // namespace
