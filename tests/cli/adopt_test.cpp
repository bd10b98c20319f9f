// `bigmac-bringup adopt` end to end: the real binary runs each example trainer once (the real
// /usr/bin/python3 with torch 1.13, and the PyTorch 2.x virtualenv's python where the build has
// one: BIGMAC_TORCH2_PYTHON; the probe on), writes a configuration, and `run-all --until single`
// with that configuration passes under the real torchrun. Bad input gets its documented exit
// code.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "testing/rank_harness.h"
#include "testing/run_program.h"

namespace bigmac::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kBinary = std::string(BIGMAC_BIN_DIR) + "/bigmac-bringup";
const std::string kDebianPython = "/usr/bin/python3";  // torch 1.13

/// The interpreters every case runs on: Debian's, and the torch 2.x virtualenv's when configured.
std::vector<std::string> interpreters() {
  std::vector<std::string> pythons = {kDebianPython};
  if (!std::string(BIGMAC_TORCH2_PYTHON).empty()) pythons.emplace_back(BIGMAC_TORCH2_PYTHON);
  return pythons;
}

class Adopt : public ::testing::TestWithParam<std::string> {
 protected:
  const std::string python_ = GetParam();

  void SetUp() override {
    // A parameterized test's name is "Name/param": one folder, not a parent left behind.
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '-');
    root_ = fs::temp_directory_path() / ("bigmac-adopt-" + std::to_string(::getpid()) + "-" + name);
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(root_);
  }

  /// `adopt -o ROOT/adopted.toml -- command`, from the repository root as a user runs it.
  ProgramResult adopt(const std::vector<std::string>& command,
                      std::vector<std::string> options = {},
                      const std::string& cwd = BIGMAC_SOURCE_DIR) {
    // The trial's output under this test's folder: kept, and removed with the folder.
    std::vector<std::string> argv = {
        kBinary, "adopt", "-o", config_file().string(), "--work-dir", (root_ / "trial").string()};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return run_program(argv, {}, cwd);
  }

  fs::path config_file() const { return root_ / "adopted.toml"; }

  std::string written() const {
    std::ifstream in(config_file());
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  /// run-all --until single with the written configuration, on a port of this test's own and
  /// with stall limits a loaded machine does not trip.
  ProgramResult run_single(const std::string& until = "single",
                           const std::string& cwd = BIGMAC_SOURCE_DIR) {
    return run_program(
        {kBinary, "run-all", "-c", config_file().string(), "--run-dir", (root_ / "run").string(),
         "--no-baseline", "--until", until, "--set", "launch.master_port=" + std::to_string(port_),
         "--set", "launch.stall_timeout_s=60", "--set", "launch.stall_min_s=30", "--set",
         "launch.init_timeout_s=60"},
        {}, cwd);
  }

  std::string gate_status(const std::string& gate) const {
    std::ifstream in(root_ / "run" / "state.json");
    const nlohmann::json state = nlohmann::json::parse(in);
    for (const auto& g : state.at("gates")) {
      if (g.at("id") == gate) return g.value("status", "");
    }
    return "missing";
  }
  std::string single_status() const { return gate_status("single"); }

  fs::path root_;
  int port_ = free_port();
};

// The "done when": an unchanged PyTorch script gets through single and dp with the
// configuration adopt wrote.
TEST_P(Adopt, PlainDdpProgramWithTheProbeAlonePassesSingleAndDp) {
  ProgramResult r = adopt({python_, "examples/plain_ddp/train.py", "--seed", "1", "--max-steps",
                           "20", "--batch-size", "8", "--grad-accum", "2", "--lr", "0.05"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string config = written();
  EXPECT_THAT(config, HasSubstr("'--seed', '{seed}', '--max-steps', '{max_steps}', "
                                "'--batch-size', '{micro_batch_size}', '--grad-accum', "
                                "'{grad_accum}', '--lr', '{lr}'"));
  EXPECT_THAT(config, HasSubstr("micro_batch_size = 8"));
  EXPECT_THAT(config, HasSubstr("gradient_accumulation_steps = 2"));
  EXPECT_THAT(config, HasSubstr("max_steps = 20"));
  EXPECT_THAT(config, HasSubstr("log_format = 'plain'"));
  // The trial ran 5 steps, not the command's 20; the probe gave what the program does not print.
  EXPECT_THAT(r.out, HasSubstr("--max-steps 5"));
  EXPECT_THAT(r.out, HasSubstr("grad_norm: probe"));
  EXPECT_THAT(r.out, HasSubstr("single  can pass"));
  // A DDP program whose ranks exchange no tensor point to point has no stages.
  EXPECT_THAT(r.out, HasSubstr("pp2     not applicable"));
  EXPECT_THAT(r.out, HasSubstr("stages: none (no tensor sent point to point)"));
  EXPECT_THAT(r.out, HasSubstr("--max-steps 5 ran 5 steps"));
  EXPECT_THAT(r.out, HasSubstr("the flag is each process's micro-batch"));
  EXPECT_THAT(config, HasSubstr("batch_scope = 'process'"));
  EXPECT_THAT(config, HasSubstr("accum_scope = 'process'"));

  ProgramResult gates = run_single("dp");
  EXPECT_EQ(gates.exit_code, 0) << gates.out << gates.err;
  EXPECT_EQ(single_status(), "passed") << gates.out;
  EXPECT_EQ(gate_status("dp"), "passed") << gates.out;
}

// A program that resumes `snapshot.pt` from its working directory, a path no flag moves: the
// trials see it resume, the draft lists it in trainer.fresh_paths, and each gate starts fresh
// while the file the trials left comes back after every gate.
TEST_P(Adopt, AProgramResumingAFixedPathGetsFreshPathsAndEachGateStartsFresh) {
  const std::string script = std::string(BIGMAC_SOURCE_DIR) + "/tests/cli/snapshot_trainer.py";
  ProgramResult r = adopt({python_, script, "--batch-size", "4"}, {}, root_.string());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out,
              HasSubstr("resumes: the second trial loaded " + (root_ / "snapshot.pt").string()));
  EXPECT_THAT(written(), HasSubstr("fresh_paths = ['snapshot.pt']"));
  ASSERT_TRUE(fs::exists(root_ / "snapshot.pt"));
  const auto trials_file = fs::file_size(root_ / "snapshot.pt");
  const auto trials_time = fs::last_write_time(root_ / "snapshot.pt");

  ProgramResult gates = run_single("dp", root_.string());
  EXPECT_EQ(gates.exit_code, 0) << gates.out << gates.err;
  EXPECT_EQ(single_status(), "passed") << gates.out;
  EXPECT_EQ(gate_status("dp"), "passed") << gates.out;
  EXPECT_THAT(gates.out, Not(HasSubstr("Resuming training")));
  // The trials' file is back, untouched; each gate's own snapshot stays with its attempt.
  EXPECT_EQ(fs::file_size(root_ / "snapshot.pt"), trials_file);
  EXPECT_EQ(fs::last_write_time(root_ / "snapshot.pt"), trials_time);
  EXPECT_TRUE(fs::exists(root_ / "run" / "01-single.1" / "wrote" / "0-snapshot.pt"));
  EXPECT_TRUE(fs::exists(root_ / "run" / "02-dp.1" / "wrote" / "0-snapshot.pt"));
  EXPECT_FALSE(fs::exists(root_ / "run" / "set-aside.json"));
}

// mp.spawn runs in place once; a spawn inside the spawned worker starts processes of its own, which
// no gate's layout could count: refused as bad input, with what to change.
TEST_P(Adopt, ASpawnInsideASpawnedWorkerIsRefused) {
  ProgramResult r = adopt({python_, "tests/cli/nested_spawn.py"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err,
              HasSubstr("starts 2 worker processes of its own with "
                        "torch.multiprocessing.spawn that the probe could not run in place"));
  EXPECT_THAT(r.err, HasSubstr("int(os.environ[\"LOCAL_RANK\"])"));
  EXPECT_FALSE(fs::exists(config_file()));
}

TEST_P(Adopt, MegatronStyleProgramReadingTheGateConfigPassesSingle) {
  ProgramResult r = adopt({python_, "examples/megatron_style/pretrain_megatron_style.py",
                           "--config", "configs/megatron-style.toml"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string config = written();
  EXPECT_THAT(config, HasSubstr("'--config', '{gate_config}'"));
  EXPECT_THAT(config, HasSubstr("log_format = 'megatron'"));
  // The values the program reads from its configuration are the user's.
  EXPECT_THAT(config, HasSubstr("seed = 1234"));
  EXPECT_THAT(config, HasSubstr("hidden = 64"));
  EXPECT_THAT(r.out, Not(HasSubstr("missing: no flag hands over")));

  ProgramResult single = run_single();
  EXPECT_EQ(single.exit_code, 0) << single.out << single.err;
  EXPECT_EQ(single_status(), "passed") << single.out;
}

TEST_P(Adopt, TorchTrainerWritingItsOwnLogFilePassesSingle) {
  ProgramResult r =
      adopt({python_, "examples/torch_trainer/train.py", "--config", "configs/torch-trainer.toml",
             "--log-file", (root_ / "mine.log").string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string config = written();
  EXPECT_THAT(config, HasSubstr("'--config', '{gate_config}', '--log-file', '{log_file}'"));
  EXPECT_THAT(config, HasSubstr("log_format = 'bigmac'"));
  EXPECT_THAT(r.out, HasSubstr("(in the log file)"));
  EXPECT_FALSE(fs::exists(root_ / "mine.log"));  // the trial wrote to a file of its own

  ProgramResult single = run_single();
  EXPECT_EQ(single.exit_code, 0) << single.out << single.err;
  EXPECT_EQ(single_status(), "passed") << single.out;
}

TEST_P(Adopt, OwnFormatTrainerGetsAFieldsMapAndPassesSingle) {
  ProgramResult r =
      adopt({python_, "tests/cli/own_format_trainer.py", "--seed", "1234", "--max-steps", "20",
             "--micro-batch-size", "2", "--grad-accum", "4", "--lr", "0.05"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string config = written();
  EXPECT_THAT(config, HasSubstr("log_format = 'regex'"));
  EXPECT_THAT(config, HasSubstr("[logs.fields]"));
  EXPECT_THAT(config, HasSubstr("step = '(?:^|[^A-Za-z0-9_])it\\s*[:=]?\\s*([0-9]+)'"));
  EXPECT_THAT(config, HasSubstr("`bsz` is not a known field"));
  EXPECT_THAT(r.out, HasSubstr("[logs.fields] proposed from"));

  ProgramResult single = run_single();
  EXPECT_EQ(single.exit_code, 0) << single.out << single.err;
  EXPECT_EQ(single_status(), "passed") << single.out;
}

// Without a step-count flag the probe ends the trial cleanly after its steps (no flag is
// needed: the probe bounds every gate too). The flags the command leaves at their argparse
// defaults (--seed, --lr) are added to it, so the gates can set them.
TEST_P(Adopt, ACommandWithoutAStepCountIsEndedByTheProbeAndItsParsersDefaultsAreAdded) {
  ProgramResult r =
      adopt({python_, "examples/plain_ddp/train.py", "--batch-size", "8", "--grad-accum", "2"},
            {"--steps", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("no step flag: the probe ended the trial after 3 steps"));
  EXPECT_THAT(r.out, HasSubstr("exit code 0"));
  EXPECT_THAT(r.out, Not(HasSubstr("train.max_steps")));
  EXPECT_THAT(r.out, HasSubstr("--seed 0 (its argparse default, added to the command) -> {seed}"));
  EXPECT_THAT(r.out, HasSubstr("--lr 0.05 (its argparse default, added to the command) -> {lr}"));
  EXPECT_THAT(r.out, Not(HasSubstr("missing: no flag hands over")));
  EXPECT_THAT(written(), HasSubstr("lr = 0.05"));
  EXPECT_THAT(written(), HasSubstr("'--seed', '{seed}', '--lr', '{lr}'"));
}

TEST_P(Adopt, ACommandThatLogsNoStepBeforeTheTimeoutIsBadInput) {
  ProgramResult r = adopt({python_, "-c",
                           "import time\nprint('loading', flush=True)\n"
                           "time.sleep(60)"},
                          {"--timeout", "2"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("logged no step with a loss in"));
  EXPECT_THAT(r.err, HasSubstr("--timeout"));
}

// Issue 30 item 21: a program that ignores SIGTERM and logs a step a second took 13 s under
// `--timeout 3` and wrote a configuration from part of its steps with exit 0.
TEST_P(Adopt, ATrialStoppedAtTheTimeLimitBeforeItsStepsIsBadInput) {
  ProgramResult r = adopt({python_, "-c",
                           "import signal, time\n"
                           "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                           "for s in range(100):\n"
                           "    print('step', s, 'loss', 1 / (s + 1), flush=True)\n"
                           "    time.sleep(1)"},
                          {"--timeout", "2", "--steps", "20"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("of the trial's 20 steps before the time limit of 2 s"));
  EXPECT_FALSE(fs::exists(config_file()));
}

// An accumulation of 1: the dp gate halves the micro-batch instead (rescale = "auto"). With an odd
// micro-batch too, two processes cannot share the step: the draft says so with one process,
// and `config check` accepts what was written.
TEST_P(Adopt, SettingsTheGatesCannotSplitGetALayoutTheyCan) {
  ProgramResult r = adopt({python_, "tests/cli/own_format_trainer.py", "--seed", "1", "--max-steps",
                           "20", "--micro-batch-size", "3", "--grad-accum", "1", "--lr", "0.05"},
                          {"--steps", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(written(), HasSubstr("nproc_per_node = 1"));
  // No stages: the pipeline gates do not apply, and nothing is fitted to them.
  EXPECT_THAT(written(), Not(HasSubstr("pp2.micro_batches")));
  ProgramResult check = run_program({kBinary, "config", "check", "-c", config_file().string()}, {},
                                    BIGMAC_SOURCE_DIR);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

TEST_P(Adopt, AProgramThatIsNotFoundIsAnInfrastructureError) {
  ProgramResult r = adopt({(root_ / "no-such-trainer").string(), "--seed", "1"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("no-such-trainer"));
  EXPECT_FALSE(fs::exists(config_file()));
}

TEST_P(Adopt, ACommandThatExitsAtOnceIsBadInputAndItsLastLinesAreShown) {
  ProgramResult r = adopt({python_, "-c",
                           "import sys; print('no GPU here', file=sys.stderr); "
                           "sys.exit(4)"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("exit code 4"));
  EXPECT_THAT(r.err, HasSubstr("before logging any step"));
  EXPECT_THAT(r.err, HasSubstr("no GPU here"));
  EXPECT_FALSE(fs::exists(config_file()));

  ProgramResult missing_script = adopt({python_, "no_such_script.py"});
  EXPECT_EQ(missing_script.exit_code, 2) << missing_script.out << missing_script.err;
  EXPECT_THAT(missing_script.err, HasSubstr("no_such_script.py"));
}

// Issue 30 item 22: a failed adopt left its bigmac-adopt-* folder in the temporary directory,
// one more per try. Without --work-dir or --keep it is removed whatever the outcome, and the
// error says how to keep it.
TEST_P(Adopt, AFailedTrialLeavesNoFolderBehindUnlessKept) {
  const fs::path tmp = root_ / "tmp";
  fs::create_directories(tmp);
  const std::vector<std::string> failing = {python_, "-c", "import sys; sys.exit(4)"};
  std::vector<std::string> argv = {kBinary, "adopt", "-o", config_file().string(), "--"};
  argv.insert(argv.end(), failing.begin(), failing.end());
  ProgramResult r = run_program(argv, {{"TMPDIR", tmp.string()}}, BIGMAC_SOURCE_DIR);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("run adopt again with --keep (or --work-dir DIR) to keep its "
                               "output"));
  EXPECT_TRUE(fs::is_empty(tmp)) << "a trial folder was left in " << tmp;

  argv.insert(argv.begin() + 2, "--keep");
  ProgramResult kept = run_program(argv, {{"TMPDIR", tmp.string()}}, BIGMAC_SOURCE_DIR);
  EXPECT_EQ(kept.exit_code, 2) << kept.out << kept.err;
  EXPECT_THAT(kept.err, HasSubstr("its output is kept in " + tmp.string() + "/bigmac-adopt-"));
  EXPECT_FALSE(fs::is_empty(tmp));
}

TEST_P(Adopt, ACommandThatPrintsNoLossIsBadInput) {
  ProgramResult r = adopt({python_, "-c", "for i in range(3): print('epoch', i, 'done')"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("printed no loss"));
  EXPECT_THAT(r.err, HasSubstr("epoch 2 done"));
  EXPECT_FALSE(fs::exists(config_file()));
}

TEST_P(Adopt, UsageErrorsAreBadInput) {
  ProgramResult none = run_program({kBinary, "adopt"});
  EXPECT_EQ(none.exit_code, 2) << none.out << none.err;
  std::ofstream(config_file()) << "mine\n";
  ProgramResult exists = adopt({python_, "-c", "print('loss 1.0')"});
  EXPECT_EQ(exists.exit_code, 2) << exists.out << exists.err;
  EXPECT_THAT(exists.err, HasSubstr("--force"));
  EXPECT_EQ(written(), "mine\n");
}

INSTANTIATE_TEST_SUITE_P(Torch, Adopt, ::testing::ValuesIn(interpreters()),
                         [](const ::testing::TestParamInfo<std::string>& interpreter) {
                           return interpreter.param == kDebianPython ? std::string("torch1_13")
                                                                     : std::string("torch2");
                         });

}  // namespace
}  // namespace bigmac::testing
