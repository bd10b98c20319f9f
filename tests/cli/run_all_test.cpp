// End-to-end: `bigmac-bringup run-all` bringing up the real bigmac-train through the gates,
// with real processes, and the fault matrix — each injected fault stopped at the gate that must
// catch it, by the check that must fire, with the run state saying so.

#include <algorithm>
#include <regex>

#include "run_all_fixture.h"

namespace {

using namespace bigmac::testing::e2e;

TEST_F(RunAll, SingleAndDataParallelPassAndRecordABaseline) {
  ProgramResult r = bringup({"run-all", "-c", kDemo, "--run-dir", (root_ / "run").string(),
                             "--no-baseline", "--until", "dp"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(gate_status("single"), "passed");
  EXPECT_EQ(gate_status("dp"), "passed");
  EXPECT_TRUE(fs::exists(root_ / "run" / "baseline.json"));
  EXPECT_TRUE(fs::exists(root_ / "run" / "01-single.1" / "gate.toml"));
  EXPECT_TRUE(fs::exists(root_ / "run" / "02-dp.1" / "verdict.json"));
  EXPECT_TRUE(fs::exists(root_ / "run" / "02-dp.1" / "launch-plan.json"));

  // status reads it back; baseline record promotes the first gate.
  ProgramResult status = run_program({kBinary, "status", (root_ / "run").string()});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("dp"));
  ProgramResult record = run_program({kBinary, "baseline", "record", (root_ / "run").string(),
                                      "--out", (root_ / "promoted.json").string()});
  EXPECT_EQ(record.exit_code, 0) << record.out << record.err;
  EXPECT_TRUE(fs::exists(root_ / "promoted.json"));
}

// D11: a run directory whose state.json is gone starts over at attempt 1. It reused the old
// 01-single.1, bigmac-train appended to the old rank0.log, and single failed "logged twice".
TEST_F(RunAll, ARunDirectoryThatLostItsStateGetsFreshAttemptFolders) {
  std::vector<std::string> args = run_args();
  args.push_back("--until");
  args.push_back("single");
  ProgramResult first = bringup(args);
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  fs::remove(root_ / "run" / "state.json");

  ProgramResult second = bringup(args);
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  EXPECT_EQ(gate_status("single"), "passed");
  EXPECT_THAT(second.out,
              HasSubstr("01-single.1 was left by an earlier attempt this run no longer records; "
                        "kept as 01-single.1.stale-1"));
  EXPECT_TRUE(fs::exists(root_ / "run" / "01-single.1.stale-1" / "rank0.log"));
  EXPECT_TRUE(fs::exists(root_ / "run" / "01-single.1" / "verdict.json"));
}

TEST_F(RunAll, ResumeAfterAFailedGateRerunsWhatTheChangedConfigInvalidated) {
  std::vector<std::string> verbose = run_args();
  verbose.push_back("-v");  // the table of gates is -v's
  ProgramResult failed = bringup(verbose, {"faults.lr_scale_by_world=true"});
  ASSERT_EQ(failed.exit_code, 1) << failed.out << failed.err;
  EXPECT_EQ(gate_status("dp"), "failed");
  // The fix names demo.toml's train.lr and the factor, not the warmup lr logged at step 0.
  EXPECT_THAT(failed.out, HasSubstr("keep train.lr at its configured 0.003 and do not multiply "
                                    "it by the data-parallel size (dp 4)"));
  EXPECT_THAT(failed.out, HasSubstr("the logged lr is 4× the baseline's"));
  // The final block puts the failure first: the verdict card, the lr at the first divergent
  // step, then the table of gates.
  const auto card = failed.out.rfind("FAILED gate 2 dp failed: lr_vs_baseline");
  const auto metric = failed.out.rfind("<- first divergent step");
  const auto table = failed.out.rfind(" #  gate");
  ASSERT_NE(card, std::string::npos) << failed.out;
  ASSERT_NE(metric, std::string::npos) << failed.out;
  EXPECT_LT(card, metric);
  EXPECT_LT(metric, table);

  // The fault is fixed: every gate that read it is stale, so single reruns too.
  ProgramResult resumed =
      bringup({"resume", (root_ / "run").string(), "-c", kDemo, "--no-baseline"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("invalidated"));
  EXPECT_THAT(resumed.out, HasSubstr("faults.lr_scale_by_world"));
  for (const char* gate : {"single", "dp", "pp2", "shapes", "target"}) {
    EXPECT_EQ(gate_status(gate), "passed") << gate;
  }
  EXPECT_TRUE(fs::exists(root_ / "run" / "junit.xml"));
  EXPECT_TRUE(fs::exists(root_ / "run" / "report.html"));
}

// A --set on resume layers on the run's own invocation. It replaced it: the demo's pp_size 2
// fell back to the built-in 1, invocation.json lost its config, and the wrong layout passed.
TEST_F(RunAll, ResumeWithASetKeepsTheRunsConfigurationAndSaysWhatItChanges) {
  ProgramResult failed = bringup(run_args(), {"faults.lr_scale_by_world=true"});
  ASSERT_EQ(failed.exit_code, 1) << failed.out << failed.err;

  ProgramResult resumed =
      bringup({"resume", (root_ / "run").string()}, {"faults.lr_scale_by_world=false"});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_THAT(resumed.out, HasSubstr("resume changes 1 value of the run's configuration:\n"
                                     "  faults.lr_scale_by_world: true -> false\n"));
  for (const char* gate : {"single", "dp", "pp2", "shapes", "target"}) {
    EXPECT_EQ(gate_status(gate), "passed") << gate;
  }
  std::ifstream gate_toml(root_ / "run" / "05-target.1" / "gate.toml");
  std::stringstream text;
  text << gate_toml.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("pp_size = 2")) << "the demo's layout, not the defaults'";
  std::ifstream invocation_file(root_ / "run" / "invocation.json");
  const nlohmann::json invocation = nlohmann::json::parse(invocation_file);
  EXPECT_EQ(invocation.at("config"), kDemo);
  const auto sets = invocation.at("set").get<std::vector<std::string>>();
  ASSERT_FALSE(sets.empty());
  EXPECT_EQ(sets.back(), "faults.lr_scale_by_world=false");
  EXPECT_NE(std::find(sets.begin(), sets.end(), "faults.lr_scale_by_world=true"), sets.end());
}

// Issue 30 item 17: a disk filled mid-gate was reported as "the orchestrator was killed": no
// state could be saved ("running") and no report written. The space held back at the start is
// freed when a write finds the disk full, so the state, the verdict and the reports say why.
TEST_F(RunAll, ADiskFilledMidGateIsSaidAndTheStateAndReportsAreSaved) {
  const fs::path disk = root_ / "disk";
  fs::create_directories(disk);
  // A small disk of its own (tmpfs), above preflight's 256 MiB floor: needs root and mount(2).
  ProgramResult mounted =
      run_program({"/bin/mount", "-t", "tmpfs", "-o", "size=270m", "tmpfs", disk.string()});
  if (mounted.exit_code != 0) GTEST_SKIP() << "cannot mount a tmpfs here: " << mounted.err;
  struct Unmount {
    fs::path dir;
    ~Unmount() { run_program({"/bin/umount", dir.string()}); }
  } unmount{disk};
  const std::string script =
      std::string(BIGMAC_SOURCE_DIR) + "/tests/cli/fixtures/disk_filling_trainer.py";
  const std::string train = std::string(BIGMAC_BIN_DIR) + "/bigmac-train";
  const fs::path run = disk / "run";
  ProgramResult r = bringup(
      {"run-all", "-c", kDemo, "--run-dir", run.string(), "--no-baseline", "--until", "single"},
      {"trainer.kind=\"command\"",
       "trainer.command=[\"/usr/bin/python3\", \"" + script + "\", \"{run_dir}\", \"" + train +
           "\", \"--config\", \"{gate_config}\", \"--log-file\", \"{log_file}\"]"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("no space left on the device")) << r.out;
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("the orchestrator stopped while the gate ran")));
  std::ifstream state_file(run / "state.json");
  const nlohmann::json state = nlohmann::json::parse(state_file);
  EXPECT_EQ(state.at("gates").at(0).at("status"), "failed") << state.dump(1);
  EXPECT_TRUE(fs::exists(run / "junit.xml"));
  EXPECT_TRUE(fs::exists(run / "report.html"));
  EXPECT_FALSE(fs::exists(run / ".disk-reserve")) << "the reserve was freed for the state";
}

// Issue 30 item 16: a gate with more ranks than the open-file limit allows ran out of
// descriptors mid-gate ("pipe: Too many open files"). Preflight says it before launching, with
// both numbers, and the gate is aborted (exit 3) with nothing started.
TEST_F(RunAll, AnOpenFileLimitTooLowForTheRanksIsRefusedBeforeLaunch) {
  if (!fs::exists("/usr/bin/prlimit")) GTEST_SKIP() << "no /usr/bin/prlimit";
  std::vector<std::string> argv =
      argv_of({"run-all", "-c", kDemo, "--run-dir", (root_ / "run").string(), "--no-baseline",
               "--until", "dp"},
              {});
  // The single gate's one rank fits in 48 descriptors, dp's four do not.
  argv.insert(argv.begin(), {"/usr/bin/prlimit", "--nofile=48:48"});
  ProgramResult r = run_program(argv, {}, BIGMAC_SOURCE_DIR);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("preflight: the gate needs about 56 open files for its 4 ranks"));
  EXPECT_THAT(r.out, HasSubstr("(ulimit -n 48, hard limit 48)"));
  EXPECT_EQ(gate_status("single"), "passed");
  EXPECT_EQ(gate_status("dp"), "aborted");
  EXPECT_FALSE(fs::exists(root_ / "run" / "02-dp.1" / "rank0.log")) << "nothing was started";
}

TEST_F(RunAll, CtrlCStopsTheRanksSavesTheStateAndResumeFinishes) {
  bigmac::testing::RankHarness harness;
  start_until_running(harness, "dp");
  harness.signal_all(SIGINT);
  ASSERT_TRUE(harness.wait_all(std::chrono::milliseconds(60000)));
  EXPECT_EQ(harness.end(0)->code, 130);
  EXPECT_EQ(state().at("phase"), "interrupted");
  EXPECT_TRUE(bigmac::testing::wait_until([&] { return leftovers().empty(); },
                                          std::chrono::milliseconds(20000)));

  // Without -c: resume continues with the configuration the run was started with.
  ProgramResult resumed = run_program({kBinary, "resume", (root_ / "run").string()});
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_EQ(gate_status("single"), "passed");
  EXPECT_EQ(gate_status("target"), "passed");
  EXPECT_THAT(resumed.out, ::testing::Not(HasSubstr("invalidated")));
}

TEST_F(RunAll, ATrimmedPipelineBoundaryIsDiagnosedAsAShapeMismatchWithTheGateToReturnTo) {
  std::vector<std::string> verbose = run_args();
  verbose.push_back("-v");  // every diagnosis, numbered, is -v's
  ProgramResult r = bringup(verbose, {"faults.boundary_seq_trim=4"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(gate_status("pp2"), "failed");
  // The diagnosis names both stages and both shapes. Its catalog entry's gate is `shapes`, a
  // later gate: the route back stays at pp2, where it failed (issue 21), and says so.
  const std::size_t first = r.out.find("1. [");
  ASSERT_NE(first, std::string::npos) << r.out;
  const std::string best = r.out.substr(first, r.out.find("\n\n", first) - first);
  EXPECT_THAT(best, HasSubstr("[shape_mismatch]"));
  EXPECT_THAT(best, HasSubstr("stage 0 sends hidden_states [2,28,64] float32"));
  EXPECT_THAT(best, HasSubstr("go back to gate: pp2"));
  EXPECT_THAT(best, HasSubstr("the catalog's route back, shapes, comes after it"));
  std::ifstream diagnosis(root_ / "run" / "03-pp2.1" / "diagnosis.json");
  EXPECT_TRUE(diagnosis.good());
}

/// One row of the fault matrix: a fault, the gate that must stop the run, the check that must
/// fire there.
struct FaultRow {
  std::string name;
  std::vector<std::string> sets;
  std::string gate;
  std::string check;
  std::string says{};  ///< a fragment of the verdict's Symptom/Cause; empty: not checked
};

/// Test names and failure messages show the fault, not the row's bytes.
void PrintTo(const FaultRow& row, std::ostream* os) {
  *os << row.name << " -> " << row.gate << "/" << row.check;
}

class FaultMatrix : public RunAll, public ::testing::WithParamInterface<FaultRow> {
 protected:
  /// The last attempt folder of `gate` (`02-dp.1`, `02-dp.2`, …).
  fs::path attempt_dir(const std::string& gate) const {
    fs::path last;
    int last_attempt = 0;
    for (const auto& entry : fs::directory_iterator(root_ / "run")) {
      const std::string name = entry.path().filename().string();
      const auto dash = name.find('-');
      const auto dot = name.rfind('.');
      if (dash == std::string::npos || dot == std::string::npos || dot < dash) continue;
      if (name.substr(dash + 1, dot - dash - 1) != gate) continue;
      const int attempt = std::stoi(name.substr(dot + 1));
      if (attempt > last_attempt) {
        last_attempt = attempt;
        last = entry.path();
      }
    }
    return last;
  }

  /// Issue 17: each failed check of the gate is explained by a diagnosis of the catalog, none
  /// by the `no_known_cause` fallback; issue 29: the headline explains `failed_check`.
  void expect_every_failed_check_explained(const std::string& gate,
                                           const std::string& failed_check) const {
    const fs::path dir = attempt_dir(gate);
    ASSERT_FALSE(dir.empty()) << "no attempt folder of " << gate;
    std::ifstream verdict_in(dir / "verdict.json");
    std::ifstream diagnosis_in(dir / "diagnosis.json");
    ASSERT_TRUE(verdict_in.good() && diagnosis_in.good()) << dir;
    const nlohmann::json verdict = nlohmann::json::parse(verdict_in);
    const nlohmann::json diagnoses = nlohmann::json::parse(diagnosis_in);
    int failed = 0;
    for (const auto& check : verdict.at("checks")) {
      if (check.at("passed").get<bool>()) continue;
      ++failed;
      const std::string name = check.at("name");
      std::vector<std::string> by;
      for (const auto& d : diagnoses) {
        const auto explains = d.value("explains", std::vector<std::string>{});
        if (std::find(explains.begin(), explains.end(), name) != explains.end()) {
          by.push_back(d.at("id"));
        }
      }
      EXPECT_FALSE(by.empty()) << name << " is explained by no diagnosis";
      EXPECT_TRUE(std::find(by.begin(), by.end(), "no_known_cause") == by.end())
          << name << " (" << check.value("message", "")
          << ") has no known cause; diagnoses: " << diagnoses.dump(1);
    }
    EXPECT_GT(failed, 0) << "the gate failed without a failed check";
    // Issue 29: the headline is the root cause. It explains the check the gate failed on, and
    // is never a consequence: a launcher's summary of a rank's exit (torchrun's, DeepSpeed's,
    // mp.spawn's; the tool's own `rank_exited_first` is the root fact it observed), a peer that
    // closed, the teardown's signals, or a failed check nothing explains.
    ASSERT_FALSE(diagnoses.empty());
    const nlohmann::json& headline = diagnoses.at(0);
    const auto explains = headline.value("explains", std::vector<std::string>{});
    EXPECT_TRUE(std::find(explains.begin(), explains.end(), failed_check) != explains.end())
        << "the headline " << headline.at("id") << " does not explain " << failed_check << ": "
        << diagnoses.dump(1);
    // (A rank's own exception with no entry, `python_exception`, is its root cause: it may
    // lead.)
    for (const char* consequence : {"peer_exited", "unexplained"}) {
      EXPECT_NE(headline.value("class", std::string()), consequence)
          << "the headline is a consequence: " << diagnoses.dump(1);
    }
    for (const char* summary :
         {"torchrun_root_cause", "torchrun_failure_entry", "torchrun_signal",
          "torchrun_worker_failed", "deepspeed_launcher_exit", "mp_spawn_process_failed"}) {
      EXPECT_NE(headline.value("id", std::string()), summary)
          << "the headline is a launcher's summary: " << diagnoses.dump(1);
    }
  }
};

/// The same matrix for the example Python trainer under the real torchrun (issue 10).
class PythonFaultMatrix : public FaultMatrix {
 protected:
  void SetUp() override {
    if (!fs::exists("/usr/bin/torchrun")) GTEST_SKIP() << "python3-torch's torchrun is missing";
    FaultMatrix::SetUp();
  }
  std::string config() const override { return kTorchTrainer; }
};

TEST_P(PythonFaultMatrix, StopsAtTheGateThatMustCatchIt) {
  const FaultRow& row = GetParam();
  ProgramResult r = bringup(run_args(), row.sets);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(gate_status(row.gate), "failed") << r.out;
  EXPECT_EQ(gate_field(row.gate, "failed_check"), row.check) << r.out;
  expect_every_failed_check_explained(row.gate, row.check);
}

INSTANTIATE_TEST_SUITE_P(
    PythonFaults, PythonFaultMatrix,
    ::testing::Values(
        FaultRow{"split_out_of_range", {"faults.split_out_of_range=true"}, "pp2", "layer_coverage"},
        FaultRow{"lr_scale_by_world", {"faults.lr_scale_by_world=true"}, "dp", "lr_vs_baseline"},
        FaultRow{"crash_rank", {"faults.crash_rank=1:3"}, "dp", "exit_status"},
        FaultRow{"hang_rank",
                 {"faults.hang_rank=1:3", "launch.stall_timeout_s=5"},
                 "dp",
                 "exit_status"}),
    [](const ::testing::TestParamInfo<FaultRow>& row) { return row.param.name; });

class PythonTrainer : public RunAll {
 protected:
  void SetUp() override {
    if (!fs::exists("/usr/bin/torchrun")) GTEST_SKIP() << "python3-torch's torchrun is missing";
    RunAll::SetUp();
  }
  std::string config() const override { return kTorchTrainer; }
};

TEST_F(PythonTrainer, UnderTorchrunPassesAllFiveGates) {
  ProgramResult r = bringup(run_args());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* gate : {"single", "dp", "pp2", "shapes", "target"}) {
    EXPECT_EQ(gate_status(gate), "passed") << gate;
  }
  // torchrun started the ranks: its argv is in the stored launch plan.
  std::ifstream plan(root_ / "run" / "05-target.1" / "launch-plan.json");
  std::string text((std::istreambuf_iterator<char>(plan)), {});
  EXPECT_THAT(text, HasSubstr("torchrun"));
}

TEST_F(PythonTrainer, MegatronLinesAloneBringUpEveryGateThatAppliesAndSayWhatTheyCannotShow) {
  ProgramResult r =
      bringup({"run-all", "-c", std::string(BIGMAC_SOURCE_DIR) + "/configs/megatron-style.toml",
               "--run-dir", (root_ / "run").string(), "--no-baseline", "-v"});
  // The lines carry step, loss, grad_norm and lr: what every gate's comparisons need. The
  // events they lack are warnings that say what to log. Issue 30 item 20: single passed but
  // refused to record its baseline ("no param_count"), and dp failed with "no baseline"; and
  // target failed no_idle_stage on the ranks that print nothing ("cannot tell whether it
  // idled"), a failure on a guess.
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* gate : {"single", "dp", "target"}) {
    EXPECT_EQ(gate_status(gate), "passed") << gate << "\n" << r.out;
  }
  EXPECT_TRUE(fs::exists(root_ / "run" / "baseline.json"));
  EXPECT_THAT(r.out, HasSubstr("unobservable: the trainer logs no model"));
  EXPECT_THAT(r.out, HasSubstr("no_idle_stage unobservable: the trainer logs no heartbeat"));
  EXPECT_THAT(r.out, HasSubstr("ok   finite_loss"));  // the steps it does log are still judged
}

/// A trainer that prints its steps as `it 3 | loss … | lr … | gn … | bsz 8 | 0.1ms`, a line no
/// built-in adapter reads, and its other events as bigmac-log JSON (tests/cli/
/// own_format_trainer.py). Only the configured `[logs.fields]` map makes steps of it, so the
/// run path must read the logs as the configuration says.
class OwnFormatTrainer : public RunAll {
 protected:
  /// A configuration for the trainer, with `log_format` and the `[logs.fields]` map given.
  std::string write_config(const std::string& log_format, bool fields) const {
    const fs::path file = root_ / (log_format + (fields ? "-fields" : "") + ".toml");
    std::ofstream out(file);
    out << "[train]\nmicro_batch_size = 2\ngradient_accumulation_steps = 4\nseed = 1234\n"
        << "max_steps = 20\nlr = 0.05\n\n[trainer]\nkind = \"command\"\n"
        << "command = [\"/usr/bin/python3\", \"" << BIGMAC_SOURCE_DIR
        << "/tests/cli/own_format_trainer.py\", \"--seed\", \"{seed}\", \"--max-steps\", "
           "\"{max_steps}\", \"--micro-batch-size\", \"{micro_batch_size}\", \"--grad-accum\", "
           "\"{grad_accum}\", \"--lr\", \"{lr}\"]\n"
        << "log_format = \"" << log_format << "\"\n";
    if (fields) {
      // `step` is 1-based (the trainer's `it 1` is global_step 0).
      out << "\n[logs.fields]\nstep = '^it (\\d+) \\|'\nloss = '\\| loss ([0-9.eE+-]+)'\n"
          << "lr = '\\| lr ([0-9.eE+-]+)'\ngrad_norm = '\\| gn ([0-9.eE+-]+)'\n"
          << "samples_per_step = '\\| bsz (\\d+)'\nstep_ms = '\\| ([0-9.]+)ms$'\n";
    }
    return file.string();
  }

  ProgramResult run_single(const std::string& config_file) {
    return bringup({"run-all", "-c", config_file, "--run-dir", (root_ / "run").string(),
                    "--no-baseline", "--until", "single"});
  }

  nlohmann::json read_json(const fs::path& file) const {
    std::ifstream in(file);
    return nlohmann::json::parse(in);
  }
};

TEST_F(OwnFormatTrainer, PassesSingleWithTheConfiguredFieldsMap) {
  ProgramResult r = run_single(write_config("regex", true));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(gate_status("single"), "passed") << r.out;
  // The baseline the run recorded holds the trainer's 20 steps, numbered from 0.
  const nlohmann::json recorded = read_json(root_ / "run" / "baseline.json");
  ASSERT_EQ(recorded.at("steps").size(), 20u) << recorded.dump();
  EXPECT_EQ(recorded.at("steps").front().at("global_step"), 0);
  EXPECT_EQ(recorded.at("steps").front().at("samples_per_step"), 8);

  // `baseline record` and `report` read the run's logs as the run's configuration says,
  // without -c: the records.json the reports read is removed, so they parse the rank log.
  ProgramResult record = run_program({kBinary, "baseline", "record", (root_ / "run").string(),
                                      "--out", (root_ / "promoted.json").string()});
  ASSERT_EQ(record.exit_code, 0) << record.out << record.err;
  EXPECT_EQ(read_json(root_ / "promoted.json").at("steps"), recorded.at("steps"));
  fs::remove(root_ / "run" / "01-single.1" / "records.json");
  ProgramResult report =
      run_program({kBinary, "report", (root_ / "run").string(), "--format", "json", "-o", "-"});
  ASSERT_EQ(report.exit_code, 0) << report.err;
  const nlohmann::json summary = nlohmann::json::parse(report.out);
  const nlohmann::json& single = summary.at("gates").at(0);
  EXPECT_EQ(single.at("steps").at("logged"), 20) << single.dump(2);
  EXPECT_EQ(single.at("ranks_logged"), 1) << single.dump(2);
}

TEST_F(OwnFormatTrainer, FailsSingleWithoutTheFieldsMapAndSaysHowToMapTheLines) {
  ProgramResult r = run_single(write_config("auto", false));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(gate_field("single", "failed_check"), "fields_present") << r.out;
  EXPECT_THAT(r.out, HasSubstr("no rank logged a `step` event"));
  EXPECT_THAT(r.out, HasSubstr("[logs.fields]"));

  // `regex` without the map is refused before anything runs.
  fs::remove_all(root_ / "run");
  ProgramResult refused = run_single(write_config("regex", false));
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_THAT(refused.err, HasSubstr("log_format \"regex\" needs a [logs.fields] table"));
  EXPECT_FALSE(fs::exists(root_ / "run" / "state.json"));
}

TEST_P(FaultMatrix, StopsAtTheGateThatMustCatchIt) {
  const FaultRow& row = GetParam();
  ProgramResult r = bringup(run_args(), row.sets);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(gate_status(row.gate), "failed") << r.out;
  EXPECT_EQ(gate_field(row.gate, "failed_check"), row.check) << r.out;
  EXPECT_THAT(r.out, HasSubstr(row.check));
  if (!row.says.empty()) {
    EXPECT_THAT(r.out, HasSubstr(row.says));
  }
  // A stall's headline names the rank the stall list names first (the culprit, never the
  // first rank that noticed).
  static const std::regex first_stalled(R"(first: rank (\d+): stalled)");
  static const std::regex headline(R"(\nSymptom: +rank (\d+) )");
  std::smatch listed, named;
  if (std::regex_search(r.out, listed, first_stalled) &&
      std::regex_search(r.out, named, headline)) {
    EXPECT_EQ(listed[1], named[1]) << r.out;
  }
  expect_every_failed_check_explained(row.gate, row.check);
}

// The fault matrix (docs/architecture.md §1, issue 7): each fault of the built-in trainer, and a
// configuration mistake, with the gate that must stop the run and the check that must fire.
// | fault                                | gate   | check                    |
// |--------------------------------------|--------|--------------------------|
// | nan_at_step=3                        | single | finite_loss              |
// | skip_step_log=4 / dup_step_log=4     | single | step_sequence            |
// | grad_blowup=3                        | single | grad_norm_stable         |
// | crash_rank=0:3                       | single | exit_status              |
// | world_size_offset=1 (rendezvous hang)| single | exit_status (stalled)    |
// | gates.dp.rescale="none" (accum kept) | dp     | samples_per_step         |
// | lr_scale_by_world                    | dp     | lr_vs_baseline           |
// | hang_rank=1:2                        | dp     | exit_status (stalled)    |
// | master_port_offset=1:1               | dp     | exit_status (stalled)    |
// | ragged_microbatch                    | dp     | sample_coverage          |
// | unsharded_data                       | dp     | no_duplicate_samples     |
// | unreduced_grads                      | dp     | replicas_in_sync         |
// | rank_seeded_init                     | dp     | param_digest             |
// | summed_grads                         | dp     | grad_norm_vs_baseline    |
// | the three above under loss_policy = "band" | dp | the same checks          |
// | split_out_of_range                   | pp2    | layer_coverage           |
// | boundary_seq_trim=4, boundary_dtype  | pp2    | exit_status              |
// | stage_stall=1:3                      | pp2    | exit_status (stalled)    |
// | untied_sync                          | pp2    | grad_norm_vs_baseline    |
// | middle_stage_loss                    | shapes | no_middle_stage_loss     |
// | all_ranks_checkpoint                 | target | single_checkpoint_writer |
INSTANTIATE_TEST_SUITE_P(
    Faults, FaultMatrix,
    ::testing::Values(
        FaultRow{"nan_at_step", {"faults.nan_at_step=3"}, "single", "finite_loss"},
        FaultRow{"skip_step_log", {"faults.skip_step_log=4"}, "single", "step_sequence"},
        FaultRow{"dup_step_log", {"faults.dup_step_log=4"}, "single", "step_sequence"},
        FaultRow{"grad_blowup", {"faults.grad_blowup=3"}, "single", "grad_norm_stable"},
        FaultRow{"crash_rank", {"faults.crash_rank=0:3"}, "single", "exit_status"},
        FaultRow{"world_size_offset",
                 {"faults.world_size_offset=1", "launch.init_timeout_s=3"},
                 "single",
                 "exit_status"},
        FaultRow{"accum_not_rescaled", {"gates.dp.rescale=\"none\""}, "dp", "samples_per_step"},
        FaultRow{"lr_scale_by_world", {"faults.lr_scale_by_world=true"}, "dp", "lr_vs_baseline"},
        // The stalled rank is named from the ranks' collective ledgers (`coll` events), not the
        // first rank that noticed: it never reached the all-reduce rank 0 waits in.
        FaultRow{"hang_rank",
                 {"faults.hang_rank=1:2", "launch.stall_timeout_s=3"},
                 "dp",
                 "exit_status",
                 "it never reached all_reduce #"},
        // Desyncs: the ranks' collectives part at one index; the verdict names the odd rank,
        // the index and the line that issued each call (issue 28).
        FaultRow{"extra_collective",
                 {"faults.extra_collective=1:2", "launch.stall_timeout_s=3"},
                 "dp",
                 "exit_status",
                 "it called barrier #8 of world (fault_injector.cpp:"},
        FaultRow{"collective_shape",
                 {"faults.collective_shape=1:2", "launch.stall_timeout_s=3"},
                 "dp",
                 "exit_status",
                 "rank 1 called all_reduce (float32[33218], trainer.cpp:"},
        FaultRow{"master_port_offset",
                 {"faults.master_port_offset=1:1", "launch.init_timeout_s=3"},
                 "dp",
                 "exit_status"},
        FaultRow{"ragged_microbatch", {"faults.ragged_microbatch=true"}, "dp", "sample_coverage"},
        // The invariants of data parallelism, from every rank's own digests (issue 27).
        FaultRow{"unsharded_data",
                 {"faults.unsharded_data=true"},
                 "dp",
                 "no_duplicate_samples",
                 "the data is not sharded across the replicas"},
        FaultRow{"unreduced_grads",
                 {"faults.unreduced_grads=true"},
                 "dp",
                 "replicas_in_sync",
                 "the data-parallel replicas drift apart"},
        FaultRow{"rank_seeded_init",
                 {"faults.rank_seeded_init=true"},
                 "dp",
                 "param_digest",
                 "the data-parallel replicas start apart"},
        FaultRow{"summed_grads",
                 {"faults.summed_grads=true"},
                 "dp",
                 "grad_norm_vs_baseline",
                 "gradients are summed where they should be averaged"},
        // ... and under an explicit band, which the invariants do not depend on.
        FaultRow{"unsharded_data_band",
                 {"faults.unsharded_data=true", "gates.dp.loss_policy=\"band\""},
                 "dp",
                 "no_duplicate_samples",
                 "the data is not sharded across the replicas"},
        FaultRow{"unreduced_grads_band",
                 {"faults.unreduced_grads=true", "gates.dp.loss_policy=\"band\""},
                 "dp",
                 "replicas_in_sync",
                 "the data-parallel replicas drift apart"},
        FaultRow{"summed_grads_band",
                 {"faults.summed_grads=true", "gates.dp.loss_policy=\"band\"",
                  "gates.dp.grad_norm_policy=\"band\""},
                 "dp",
                 "grad_norm_vs_baseline",
                 "gradients are summed where they should be averaged"},
        FaultRow{"split_out_of_range", {"faults.split_out_of_range=true"}, "pp2", "layer_coverage"},
        FaultRow{"boundary_seq_trim", {"faults.boundary_seq_trim=4"}, "pp2", "exit_status"},
        FaultRow{"boundary_dtype", {"faults.boundary_dtype=bf16"}, "pp2", "exit_status"},
        // The stage that never sent is named, not the one waiting in its receive.
        FaultRow{"stage_stall",
                 {"faults.stage_stall=1:3", "launch.stall_timeout_s=3"},
                 "pp2",
                 "exit_status",
                 "it never reached recv #"},
        // grad_norm differs from step 0, the loss from step 1: the gate stops at step 0.
        FaultRow{"untied_sync", {"faults.untied_sync=true"}, "pp2", "grad_norm_vs_baseline"},
        FaultRow{"middle_stage_loss",
                 {"faults.middle_stage_loss=true"},
                 "shapes",
                 "no_middle_stage_loss"},
        FaultRow{"all_ranks_checkpoint",
                 {"faults.all_ranks_checkpoint=true"},
                 "target",
                 "single_checkpoint_writer"}),
    [](const ::testing::TestParamInfo<FaultRow>& row) { return row.param.name; });

}  // namespace
