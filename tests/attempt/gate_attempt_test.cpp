// A whole gate attempt (plan -> preflight -> launch and watch -> evaluate -> verdict ->
// persist) driven through the fake process runner: no trainer runs, every other part is real.

#include "attempt/gate_attempt.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "attempt/attempt_plan.h"
#include "config/config.h"
#include "core/atomic_file.h"
#include "diagnose/catalog.h"
#include "testing/fake_clock.h"
#include "testing/fake_process_runner.h"
#include "testing/rank_harness.h"

namespace bigmac::attempt {
namespace {

namespace fs = std::filesystem;
using testing::FakeClock;
using testing::FakeProcessRunner;

/// Progress that keeps what it was told.
class RecordingProgress final : public report::Progress {
 public:
  void run_started(const std::string&, std::size_t) override {}
  void gate_started(const GateStart& gate) override { started.push_back(gate); }
  void ranks_up(int up) override { ranks = up; }
  void step(std::int64_t global_step, std::optional<double>,
            std::optional<double> baseline_loss) override {
    steps.push_back(global_step);
    if (baseline_loss) baseline_steps.push_back(global_step);
  }
  void tick(const std::optional<Silence>&) override { ++ticks; }
  void gate_finished(const gates::GateVerdict& verdict, const std::string&) override {
    finished.emplace_back(verdict.gate_id,
                          verdict.passed ? run::GateStatus::kPassed : run::GateStatus::kFailed);
  }
  void message(const std::string& text) override { messages += text + "\n"; }
  void detail(const std::string& text) override { messages += text + "\n"; }
  void run_finished(const report::ReportInput&, const std::string&) override {}

  std::vector<GateStart> started;
  int ranks = 0;
  int ticks = 0;
  std::vector<std::int64_t> steps, baseline_steps;
  std::vector<std::pair<std::string, run::GateStatus>> finished;
  std::string messages;
};

/// The bigmac-log lines of one healthy rank: `loss(step)` gives its loss.
std::vector<std::string> rank_lines(int rank, int world, int steps, bool owns_steps,
                                    std::int64_t micro, std::int64_t accum, double (*loss)(int)) {
  std::vector<std::string> out;
  const double t = 1764412800.0;
  out.push_back(fmt::format(
      R"({{"ev":"run","rank":{},"t":{},"world_size":{},"local_rank":{},"device":"cpu","backend":"{}","dtype":"float32","seed":1234,"torch_version":"1.13.1","pid":{},"tool_version":"0.1.0"}})",
      rank, t, world, rank, world > 1 ? "gloo" : "none", 100 + rank));
  if (world > 1) {
    out.push_back(fmt::format(
        R"({{"ev":"pg_ready","rank":{},"t":{},"init_ms":3.5,"world_size":{},"backend":"gloo"}})",
        rank, t + 0.1, world));
  }
  out.push_back(fmt::format(
      R"({{"ev":"batch","rank":{},"t":{},"micro_batch_size":{},"grad_accum":{},"dp":{},"samples_per_step":{},"seq_length":32,"input_shape":[{},32],"input_dtype":"int64"}})",
      rank, t + 0.2, micro, accum, world, micro * accum * world, micro));
  out.push_back(fmt::format(
      R"({{"ev":"model","rank":{},"t":{},"param_count":52000,"param_digest":"0123abcd"}})", rank,
      t + 0.3));
  for (int s = 0; s < steps; ++s) {
    if (owns_steps) {
      out.push_back(fmt::format(
          R"({{"ev":"step","rank":{},"t":{},"global_step":{},"loss":{},"grad_norm":{},"lr":0.003,"samples_per_step":{},"step_ms":10.0}})",
          rank, t + 1 + s, s, loss(s), 1.0 - 0.01 * s, micro * accum * world));
    } else {
      out.push_back(fmt::format(R"({{"ev":"heartbeat","rank":{},"t":{},"global_step":{}}})", rank,
                                t + 1 + s, s));
    }
  }
  out.push_back(
      fmt::format(R"({{"ev":"done","rank":{},"t":{},"steps":{}}})", rank, t + 2 + steps, steps));
  return out;
}

double falling(int step) { return 4.0 - 0.1 * step; }
double wrong_later(int step) { return step < 2 ? falling(step) : falling(step) + 0.5; }

/// Whether the attempt ended with a verdict that passed.
bool passed(const run::Observation& o) {
  const auto* finished = std::get_if<run::GateFinished>(&o);
  return finished != nullptr && finished->passed;
}

/// Why the attempt could not run; a test failure (and "") when it ended otherwise.
std::string abort_message(const run::Observation& o) {
  const auto* aborted = std::get_if<run::GateAborted>(&o);
  EXPECT_NE(aborted, nullptr) << "not aborted: observation " << o.index();
  return aborted ? aborted->message : std::string();
}

class GateAttempt : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    run_dir_ =
        fs::temp_directory_path() / fmt::format("bigmac-attempt-{}-{}", ::getpid(), info->name());
    fs::remove_all(run_dir_);
    fs::create_directories(run_dir_);
    // A trainer that exists and is executable, so preflight passes; the fake runner never
    // starts it.
    config::ConfigSources sources;
    sources.overrides = {"trainer.binary=/bin/true", "train.max_steps=4",
                         fmt::format("launch.master_port={}", testing::free_port())};
    auto config = config::load_config(sources);
    ASSERT_TRUE(config) << config.error().front().format();
    auto context =
        RunContext::create(std::move(*config), {"", (run_dir_ / "no-stored-baseline.json").string(),
                                                std::string(BIGMAC_SOURCE_DIR) + "/stages"});
    ASSERT_FALSE(context) << "a named --baseline that does not exist is refused";
    auto again = config::load_config(sources);
    ASSERT_TRUE(again);
    auto ok =
        RunContext::create(std::move(*again), {"", "", std::string(BIGMAC_SOURCE_DIR) + "/stages"});
    ASSERT_TRUE(ok) << ok.error().front().format();
    context_ = std::make_unique<RunContext>(std::move(*ok));
    // The stored baseline of the demo must not be the reference here: this run records its own.
    context_->stored_baseline = run_dir_ / "stored-baseline-absent.json";

    auto catalog = diagnose::builtin_catalog();
    ASSERT_TRUE(catalog);
    auto diagnoser = diagnose::Diagnoser::create(std::move(*catalog));
    ASSERT_TRUE(diagnoser);
    diagnoser_ = std::make_unique<diagnose::Diagnoser>(std::move(*diagnoser));
  }
  void TearDown() override { fs::remove_all(run_dir_); }

  /// Services whose runner plays `script` for each attempt.
  AttemptServices services(std::function<void(FakeProcessRunner&)> script) {
    AttemptServices s;
    s.make_runner = [this, script] {
      auto runner = std::make_unique<FakeProcessRunner>(&clock_);
      script(*runner);
      return runner;
    };
    s.clock = &clock_;
    s.probe_devices = [] { return launch::DeviceInventory{{}, "none found"}; };
    s.wall_time = [] { return 1764412800.0; };
    s.cancel = &cancel_;
    s.progress = &progress_;
    s.diagnoser = diagnoser_.get();
    return s;
  }

  static void play(FakeProcessRunner& runner, int world, double (*loss)(int)) {
    for (int rank = 0; rank < world; ++rank) {
      for (const std::string& line : rank_lines(rank, world, 4, rank == 0, 2, 4 / world, loss)) {
        runner.emit_line(rank, line);
      }
    }
    for (int rank = 0; rank < world; ++rank) runner.exit(rank, 0);
  }

  nlohmann::json read_json(const fs::path& file) {
    auto text = read_file(file);
    EXPECT_TRUE(text) << file;
    return text ? nlohmann::json::parse(*text) : nlohmann::json();
  }

  fs::path run_dir_;
  std::unique_ptr<RunContext> context_;
  std::unique_ptr<diagnose::Diagnoser> diagnoser_;
  FakeClock clock_;
  std::atomic<bool> cancel_{false};
  RecordingProgress progress_;
};

TEST_F(GateAttempt, SinglePassesRecordsTheBaselineAndPersistsEveryFile) {
  AttemptServices s = services([](FakeProcessRunner& r) { play(r, 1, falling); });
  const run::Observation outcome = run_attempt(*context_, run_dir_, "single", 1, s);
  const auto* finished = std::get_if<run::GateFinished>(&outcome);
  ASSERT_NE(finished, nullptr) << outcome.index();
  EXPECT_TRUE(finished->passed) << finished->summary;
  EXPECT_TRUE(finished->inputs.baseline.empty()) << "single had no reference to compare with";

  const fs::path dir = run_dir_ / "01-single.1";
  for (const char* file :
       {"gate.toml", "launch-plan.json", "result.json", "records.json", "verdict.json"}) {
    EXPECT_TRUE(fs::exists(dir / file)) << file;
  }
  EXPECT_FALSE(fs::exists(dir / "diagnosis.json"));
  EXPECT_TRUE(fs::exists(run_dir_ / "baseline.json"));
  const nlohmann::json records = read_json(dir / "records.json");
  EXPECT_EQ(records["ranks_logged"], 1);
  ASSERT_EQ(records["steps"].size(), 4u);
  EXPECT_DOUBLE_EQ(records["steps"][3]["loss"].get<double>(), falling(3));
  EXPECT_EQ(read_json(dir / "verdict.json")["passed"], true);
  EXPECT_EQ(read_json(dir / "result.json")["status"], "succeeded");

  ASSERT_EQ(progress_.started.size(), 1u);
  EXPECT_EQ(progress_.started[0].ranks, 1);
  EXPECT_EQ(progress_.steps, (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_TRUE(progress_.baseline_steps.empty());
  ASSERT_EQ(progress_.finished.size(), 1u);
  EXPECT_EQ(progress_.finished[0].second, run::GateStatus::kPassed);
}

TEST_F(GateAttempt, DataParallelComparesWithTheRecordedBaselineOnce) {
  AttemptServices single = services([](FakeProcessRunner& r) { play(r, 1, falling); });
  ASSERT_TRUE(passed(run_attempt(*context_, run_dir_, "single", 1, single)));

  AttemptServices dp = services([&](FakeProcessRunner& r) { play(r, 4, falling); });
  const run::Observation outcome = run_attempt(*context_, run_dir_, "dp", 1, dp);
  const auto* finished = std::get_if<run::GateFinished>(&outcome);
  ASSERT_NE(finished, nullptr) << outcome.index();
  EXPECT_TRUE(finished->passed) << finished->summary;
  EXPECT_EQ(finished->inputs.baseline, baseline::file_digest(run_dir_ / "baseline.json"));
  EXPECT_EQ(progress_.ranks, 4);
  // Progress showed the baseline's loss beside every dp step.
  EXPECT_EQ(progress_.baseline_steps, (std::vector<std::int64_t>{0, 1, 2, 3}));
  const nlohmann::json plan = read_json(run_dir_ / "02-dp.1" / "launch-plan.json");
  EXPECT_EQ(plan["world_size"], 4);
}

TEST_F(GateAttempt, ADivergingLossFailsWithADiagnosisAndRouteBack) {
  AttemptServices single = services([](FakeProcessRunner& r) { play(r, 1, falling); });
  ASSERT_TRUE(passed(run_attempt(*context_, run_dir_, "single", 1, single)));
  AttemptServices dp = services([](FakeProcessRunner& r) { play(r, 4, wrong_later); });
  const run::Observation outcome = run_attempt(*context_, run_dir_, "dp", 1, dp);
  const auto* finished = std::get_if<run::GateFinished>(&outcome);
  ASSERT_NE(finished, nullptr) << outcome.index();
  ASSERT_FALSE(finished->passed);
  EXPECT_EQ(finished->failed_check, "loss_vs_baseline");
  EXPECT_EQ(finished->route_back, "dp");
  // The verdict was printed with its checks (under -v), the loop prints nothing of its own.
  EXPECT_NE(progress_.messages.find("loss_vs_baseline"), std::string::npos);
  const nlohmann::json diagnoses = read_json(run_dir_ / "02-dp.1" / "diagnosis.json");
  ASSERT_TRUE(diagnoses.is_array());
  ASSERT_FALSE(diagnoses.empty());
  EXPECT_EQ(diagnoses[0]["id"], "loss_diverges_after_match");
  EXPECT_NE(progress_.messages.find("loss_diverges_after_match"), std::string::npos)
      << progress_.messages;
}

TEST_F(GateAttempt, ACrashedRankIsJudgedFromItsExitAndItsLastLines) {
  AttemptServices s = services([](FakeProcessRunner& r) {
    r.emit_line(0, R"({"ev":"run","rank":0,"world_size":1})");
    r.emit_error_line(0,
                      "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x32 and 64x128)");
    r.exit(0, 1);
  });
  const run::Observation outcome = run_attempt(*context_, run_dir_, "single", 1, s);
  const auto* finished = std::get_if<run::GateFinished>(&outcome);
  ASSERT_NE(finished, nullptr) << outcome.index();
  ASSERT_FALSE(finished->passed);
  EXPECT_EQ(finished->failed_check, "exit_status");
  EXPECT_FALSE(fs::exists(run_dir_ / "baseline.json")) << "a failed single records nothing";
  const nlohmann::json diagnoses = read_json(run_dir_ / "01-single.1" / "diagnosis.json");
  ASSERT_FALSE(diagnoses.empty());
  bool shape_mismatch = false;
  for (const auto& d : diagnoses) shape_mismatch |= d["class"] == "shape_mismatch";
  EXPECT_TRUE(shape_mismatch) << diagnoses.dump(2);
}

TEST_F(GateAttempt, CtrlCEndsTheAttemptInterruptedWithItsResultKept) {
  AttemptServices s = services([this](FakeProcessRunner& r) {
    r.emit_line(0, R"({"ev":"run","rank":0,"world_size":1})");
    r.on_idle_poll = [this](FakeProcessRunner&) { cancel_ = true; };
  });
  const run::Observation outcome = run_attempt(*context_, run_dir_, "single", 1, s);
  EXPECT_TRUE(std::holds_alternative<run::Interrupted>(outcome)) << outcome.index();
  EXPECT_EQ(read_json(run_dir_ / "01-single.1" / "result.json")["status"], "interrupted");
  EXPECT_FALSE(fs::exists(run_dir_ / "01-single.1" / "verdict.json"));
}

TEST_F(GateAttempt, AnUnwritableAttemptFolderIsAnInfrastructureAbort) {
  // A file where the attempt folder must go: nothing can be written there.
  ASSERT_TRUE(write_file_atomically(run_dir_ / "01-single.1", "in the way"));
  AttemptServices s = services([](FakeProcessRunner& r) { play(r, 1, falling); });
  const std::string why = abort_message(run_attempt(*context_, run_dir_, "single", 1, s));
  EXPECT_NE(why.find("01-single.1"), std::string::npos) << why;
}

TEST_F(GateAttempt, ADamagedRecordedBaselineIsAnErrorNotAMissingReference) {
  ASSERT_TRUE(write_file_atomically(run_dir_ / "baseline.json", "{\"steps\": [tru"));
  AttemptServices s = services([](FakeProcessRunner& r) { play(r, 4, falling); });
  const std::string why = abort_message(run_attempt(*context_, run_dir_, "dp", 1, s));
  EXPECT_NE(why.find("baseline.json"), std::string::npos) << why;
  EXPECT_FALSE(fs::exists(run_dir_ / "02-dp.1")) << "nothing launched";
}

TEST_F(GateAttempt, ADamagedStoredBaselineStopsTheRunBeforeAnythingLaunches) {
  const fs::path stored = run_dir_ / "stored.json";
  ASSERT_TRUE(write_file_atomically(stored, "{\"name\": \"demo-cpu\", \"steps\": [1, 2"));
  config::ConfigSources sources;
  auto config = config::load_config(sources);
  ASSERT_TRUE(config);
  auto context = RunContext::create(
      std::move(*config), {"", stored.string(), std::string(BIGMAC_SOURCE_DIR) + "/stages"});
  ASSERT_FALSE(context);
  EXPECT_EQ(exit_code_for(context.error()), ExitCode::kBadInput);
  EXPECT_NE(context.error().front().format().find("stored.json"), std::string::npos)
      << context.error().front().format();
}

TEST_F(GateAttempt, PlanIsTheSameCodeForPrintingAndRunning) {
  auto planned = plan_attempt(*context_, *context_->catalog.find("dp"), nullptr, run_dir_, 1, {});
  ASSERT_TRUE(planned) << planned.error().format();
  EXPECT_EQ(planned->dir, run_dir_ / "02-dp.1");
  EXPECT_EQ(planned->launch.world_size, 4);
  const std::string text = format_attempt_plan(*planned, /*verbose=*/true);
  EXPECT_NE(text.find("== gate 2/5 dp"), std::string::npos) << text;
  EXPECT_NE(text.find("BIGMAC_GATE"), std::string::npos) << "the ranks' environment is shown";
  // The summary is a few lines a gate: the layout, the launcher, one argv, no environment.
  const std::string summary = format_attempt_plan(*planned);
  EXPECT_EQ(summary.find("BIGMAC_GATE"), std::string::npos) << summary;
  EXPECT_NE(summary.find("launcher builtin: 4 ranks on 1 node"), std::string::npos) << summary;
  EXPECT_LE(std::count(summary.begin(), summary.end(), '\n'), 6) << summary;
  const nlohmann::json j = attempt_plan_json(*planned);
  EXPECT_EQ(j["gate"], "dp");
  EXPECT_EQ(j["launch"]["world_size"], 4);
  EXPECT_EQ(j["dp"], 4);
}

}  // namespace
}  // namespace bigmac::attempt
