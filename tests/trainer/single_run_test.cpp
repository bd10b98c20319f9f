// bigmac-train as one process: the baseline run of gate 1 (docs/architecture.md §1).

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "train_run.h"

namespace bigmac::testing {
namespace {

TEST(SingleRun, TwentyStepsLogEveryFieldAndTheLossFalls) {
  TempDir dir;
  auto args = base_args(dir / "train.jsonl");
  RankEnd end = run_single(dir.path(), args);
  ASSERT_EQ(end.code, 0) << RankJob::read_text(dir / "single.err");
  TrainLog log = TrainLog::read(dir / "train.jsonl");

  ASSERT_FALSE(log.events.empty());
  EXPECT_EQ(log.events.front().at("ev"), "run");
  EXPECT_EQ(log.events.back().at("ev"), "done");
  for (const auto& event : log.events) {
    EXPECT_EQ(event.at("rank"), 0);
    EXPECT_TRUE(event.at("t").is_number_float());
  }
  auto run = log.of("run").at(0);
  for (const char* key : {"world_size", "local_rank", "device", "backend", "dtype", "seed",
                          "torch_version", "pid", "tool_version"}) {
    EXPECT_TRUE(run.contains(key)) << key;
  }
  EXPECT_EQ(run.at("backend"), "none");
  EXPECT_EQ(run.at("device"), "cpu");
  EXPECT_EQ(run.at("world_size"), 1);
  EXPECT_TRUE(log.of("pg_ready").empty()) << "no process group for one process";

  auto batch = log.of("batch").at(0);
  EXPECT_EQ(batch.at("micro_batch_size"), 2);
  EXPECT_EQ(batch.at("grad_accum"), 4);
  EXPECT_EQ(batch.at("dp"), 1);
  EXPECT_EQ(batch.at("samples_per_step"), 8);
  EXPECT_EQ(batch.at("seq_length"), 32);
  EXPECT_EQ(batch.at("input_shape"), nlohmann::json::array({2, 32}));
  EXPECT_EQ(batch.at("input_dtype"), "int64");

  auto model = log.of("model").at(0);
  EXPECT_GT(model.at("param_count").get<long>(), 0);
  EXPECT_EQ(model.at("param_digest").get<std::string>().size(), 16u);
  auto layout = log.of("layout").at(0);
  EXPECT_EQ(layout.at("first_layer"), 0);
  EXPECT_EQ(layout.at("last_layer"), 3);
  EXPECT_EQ(layout.at("param_count"), model.at("param_count"));

  auto steps = log.of("step");
  ASSERT_EQ(steps.size(), 20u);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto& step = steps[i];
    EXPECT_EQ(step.at("global_step"), static_cast<int>(i));
    for (const char* key : {"loss", "grad_norm", "lr", "samples_per_step", "step_ms"}) {
      EXPECT_TRUE(step.contains(key)) << key;
    }
    EXPECT_TRUE(std::isfinite(TrainLog::number_of(step.at("loss"))));
    EXPECT_GT(TrainLog::number_of(step.at("grad_norm")), 0.0);
    EXPECT_EQ(step.at("samples_per_step"), 8);
  }
  // Warmup: lr rises linearly over the first 5 steps to 3e-3, then stays.
  EXPECT_NEAR(steps[0].at("lr").get<double>(), 3e-3 / 5, 1e-12);
  EXPECT_NEAR(steps[10].at("lr").get<double>(), 3e-3, 1e-12);

  auto losses = log.values("step", "loss");
  double first = (losses[0] + losses[1]) / 2;
  double last = (losses[18] + losses[19]) / 2;
  EXPECT_LT(last, first * 0.75) << "loss must fall clearly within 20 steps: " << first << " -> "
                                << last;

  EXPECT_EQ(log.finished_heartbeats().size(), 20u);
  auto ckpt = log.of("ckpt");
  ASSERT_EQ(ckpt.size(), 1u);
  EXPECT_EQ(ckpt[0].at("step"), 19);
  EXPECT_TRUE(std::filesystem::exists(ckpt[0].at("path").get<std::string>()));
  // One digest a step (its first micro-batch; the parameters at 0, 1, 2, 4, 8, 16), then the
  // final parameters.
  const auto digests = log.of("digest");
  ASSERT_EQ(digests.size(), 21u);
  std::vector<int> param_steps;
  for (std::size_t s = 0; s < 20; ++s) {
    EXPECT_EQ(digests[s].at("global_step"), static_cast<int>(s));
    EXPECT_EQ(digests[s].at("input_digest").get<std::string>().size(), 16u);
    if (digests[s].contains("param_digest")) param_steps.push_back(static_cast<int>(s));
  }
  EXPECT_EQ(param_steps, (std::vector<int>{0, 1, 2, 4, 8, 16}));
  EXPECT_NE(digests[0].at("input_digest"), digests[1].at("input_digest"));
  const auto& digest = digests.back();
  EXPECT_NE(digest.at("param_digest"), model.at("param_digest")) << "training changed nothing";
  EXPECT_EQ(digest.at("global_step"), 19);
  EXPECT_EQ(log.of("done").at(0).at("steps"), 20);
}

TEST(SingleRun, SameSeedSameRunOtherSeedOtherModel) {
  TempDir dir;
  auto run = [&](const std::string& name, const std::string& seed) {
    auto args = base_args(dir / name);
    args.insert(args.end(), {"--seed", seed, "--max-steps", "2"});
    EXPECT_EQ(run_single(dir.path(), args).code, 0);
    return TrainLog::read(dir / name);
  };
  TrainLog a = run("a.jsonl", "7");
  TrainLog b = run("b.jsonl", "7");
  TrainLog c = run("c.jsonl", "8");
  EXPECT_EQ(a.of("run").at(0).at("seed"), 7);
  EXPECT_EQ(a.values("step", "loss"), b.values("step", "loss"));
  EXPECT_EQ(a.of("digest").at(0).at("param_digest"), b.of("digest").at(0).at("param_digest"));
  EXPECT_NE(a.of("model").at(0).at("param_digest"), c.of("model").at(0).at("param_digest"));
  EXPECT_EQ(a.of("step").size(), 2u);
}

TEST(SingleRun, FormGroupRunsTheCollectivesOfOneProcessAndChangesNoValue) {
  TempDir dir;
  auto args = base_args(dir / "plain.jsonl");
  args.insert(args.end(), {"--max-steps", "3"});
  ASSERT_EQ(run_single(dir.path(), args).code, 0) << RankJob::read_text(dir / "single.err");

  // The same run forming its (one-rank) process group: every step's gradients and loss go
  // through the backend's all-reduce. The default backend on CPU is gloo.
  args = base_args(dir / "group.jsonl");
  args.insert(args.end(), {"--max-steps", "3", "--form-group"});
  RankHarness harness;
  harness.spawn(args,
                {{"OMP_NUM_THREADS", "1"},
                 {"MASTER_ADDR", "127.0.0.1"},
                 {"MASTER_PORT", std::to_string(free_port())}},
                dir / "group.out", dir / "group.err");
  ASSERT_TRUE(harness.wait_all(90000ms)) << "bigmac-train --form-group did not finish";
  ASSERT_EQ(harness.end(0)->code, 0) << RankJob::read_text(dir / "group.err");

  TrainLog plain = TrainLog::read(dir / "plain.jsonl");
  TrainLog group = TrainLog::read(dir / "group.jsonl");
  EXPECT_EQ(plain.of("run").at(0).at("backend"), "none");
  EXPECT_EQ(group.of("run").at(0).at("backend"), "gloo");
  ASSERT_EQ(group.of("pg_ready").size(), 1u);
  EXPECT_EQ(group.of("pg_ready").at(0).at("world_size"), 1);
  EXPECT_EQ(group.values("step", "loss"), plain.values("step", "loss"))
      << "a sum over one rank changes nothing";
  EXPECT_EQ(group.of("digest").at(0).at("param_digest"),
            plain.of("digest").at(0).at("param_digest"));
}

// --version's second line names the LibTorch the build compiled against and the process groups
// it can form; both claims are held against what the binary then does (a wheel's LibTorch
// without Gloo's headers forms no CPU group).
TEST(SingleRun, VersionNamesItsLibTorchAndTheGroupsItCanForm) {
  TempDir dir;
  ASSERT_EQ(run_single(dir.path(), {train_binary(), "--version"}).code, 0);
  const std::string out = RankJob::read_text(dir / "single.out");
  std::smatch match;
  ASSERT_TRUE(std::regex_match(
      out, match, std::regex(R"(bigmac-train \S+\nLibTorch (\S+), process groups: ([a-z ]+)\n)")))
      << out;
  const std::string torch_version = match[1];
  std::istringstream names(match[2].str());
  bool gloo = false;
  for (std::string name; names >> name;) gloo = gloo || name == "gloo";

  auto args = base_args(dir / "group.jsonl");
  args.insert(args.end(), {"--max-steps", "1", "--form-group", "--set", "launch.devices=cpu",
                           "--set", "launch.backend=gloo"});
  RankHarness harness;
  harness.spawn(args,
                {{"OMP_NUM_THREADS", "1"},
                 {"MASTER_ADDR", "127.0.0.1"},
                 {"MASTER_PORT", std::to_string(free_port())}},
                dir / "group.out", dir / "group.err");
  ASSERT_TRUE(harness.wait_all(90000ms)) << "bigmac-train --form-group did not finish";
  const std::string err = RankJob::read_text(dir / "group.err");
  if (gloo) {
    ASSERT_EQ(harness.end(0)->code, 0) << err;
    TrainLog group = TrainLog::read(dir / "group.jsonl");
    EXPECT_EQ(group.of("run").at(0).at("torch_version"), torch_version);
    EXPECT_EQ(group.of("run").at(0).at("backend"), "gloo");
  } else {
    EXPECT_EQ(harness.end(0)->code, 3) << err;
    EXPECT_NE(err.find("built without Gloo"), std::string::npos) << err;
  }
}

TEST(SingleRun, ReadsTheConfigFileAndCommandLineOverridesWin) {
  TempDir dir;
  {
    std::ofstream toml(dir / "gate.toml");
    toml << "[train]\nseed = 99\nmicro_batch_size = 1\nmax_steps = 5\n";
  }
  auto args = base_args(dir / "train.jsonl");
  args.insert(args.end(), {"--config", (dir / "gate.toml").string(), "--max-steps", "1"});
  ASSERT_EQ(run_single(dir.path(), args).code, 0) << RankJob::read_text(dir / "single.err");
  TrainLog log = TrainLog::read(dir / "train.jsonl");
  EXPECT_EQ(log.of("run").at(0).at("seed"), 99);
  EXPECT_EQ(log.of("batch").at(0).at("micro_batch_size"), 1);
  EXPECT_EQ(log.of("step").size(), 1u) << "--max-steps beats the file";
}

TEST(SingleRun, InvalidConfigurationExitsTwoBeforeTheNetwork) {
  TempDir dir;
  auto args = base_args(dir / "train.jsonl");
  args.insert(args.end(), {"--set", "train.micro_batch_size=0"});
  // A rank of a two-process job whose peer never comes: had it tried the rendezvous, it would
  // wait for the peer instead of exiting 2 at once.
  RankHarness harness;
  harness.spawn(args,
                {{"RANK", "1"},
                 {"WORLD_SIZE", "2"},
                 {"MASTER_ADDR", "127.0.0.1"},
                 {"MASTER_PORT", std::to_string(free_port())}},
                dir / "single.out", dir / "single.err");
  ASSERT_TRUE(harness.wait_all(60000ms));
  EXPECT_EQ(harness.end(0)->code, 2);
  std::string err = RankJob::read_text(dir / "single.err");
  EXPECT_NE(err.find("micro_batch_size"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(dir / "train.jsonl")) << "no log before the config is valid";
}

TEST(SingleRun, UnknownOptionExitsTwoWithUsage) {
  TempDir dir;
  RankEnd end = run_single(dir.path(), {train_binary(), "--no-such-option"});
  EXPECT_EQ(end.code, 2);
  EXPECT_NE(RankJob::read_text(dir / "single.err").find("--no-such-option"), std::string::npos);
}

}  // namespace
}  // namespace bigmac::testing
