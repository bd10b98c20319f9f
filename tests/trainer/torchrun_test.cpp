// bigmac-train under the real torchrun of its own torch (Debian python3-torch for libtorch-dev,
// the virtualenv's for a pip wheel's LibTorch: BIGMAC_TORCHRUN, tests/trainer/CMakeLists.txt):
// the workers join the agent's TCPStore and train two-way data parallel.

#include <gtest/gtest.h>

#include <cmath>

#include "train_run.h"

namespace bigmac::testing {
namespace {

constexpr const char* kTorchrun = BIGMAC_TORCHRUN;

TEST(Torchrun, TwoWorkersTrainDataParallel) {
  if (!std::filesystem::exists(kTorchrun)) GTEST_SKIP() << "no " << kTorchrun;
  TempDir dir;
  const int steps = 3;
  auto single_args = base_args(dir / "single.jsonl");
  single_args.insert(single_args.end(), {"--max-steps", std::to_string(steps)});
  ASSERT_EQ(run_single(dir.path(), single_args).code, 0);
  TrainLog single = TrainLog::read(dir / "single.jsonl");

  RankHarness harness;
  std::vector<std::string> argv = {
      kTorchrun, "--no_python", "--nnodes", "1", "--nproc_per_node", "2", "--master_addr",
      "127.0.0.1", "--master_port", std::to_string(free_port()),
      // torch 1.13 on Python 3.11 cannot parse the default "0" of
      // --redirects/--tee (Std flag lookup returns None); any
      // non-zero value works.
      "--redirects", "1", "--tee", "2", "--log_dir", (dir / "torchrun-logs").string(),
      train_binary(), "--log-file", (dir / "rank{rank}.jsonl").string(), "--set",
      "launch.threads_per_rank=1", "--set", "train.gradient_accumulation_steps=2", "--max-steps",
      std::to_string(steps)};
  harness.spawn(argv, {{"OMP_NUM_THREADS", "1"}}, dir / "torchrun.out", dir / "torchrun.err");
  ASSERT_TRUE(harness.wait_all(100000ms)) << "torchrun did not finish";
  ASSERT_EQ(harness.end(0)->code, 0) << RankJob::read_text(dir / "torchrun.err");

  TrainLog rank0 = TrainLog::read(dir / "rank0.jsonl");
  TrainLog rank1 = TrainLog::read(dir / "rank1.jsonl");
  EXPECT_EQ(rank0.of("run").at(0).at("world_size"), 2);
  EXPECT_EQ(rank1.of("run").at(0).at("local_rank"), 1);
  EXPECT_EQ(rank0.of("pg_ready").size(), 1u);
  EXPECT_EQ(rank1.of("pg_ready").size(), 1u);
  auto base = single.values("step", "loss");
  auto losses = rank0.values("step", "loss");
  ASSERT_EQ(losses.size(), base.size());
  for (std::size_t i = 0; i < losses.size(); ++i) {
    EXPECT_NEAR(losses[i], base[i], 1e-4 * std::abs(base[i])) << "step " << i;
  }
  EXPECT_EQ(rank0.of("digest").at(0).at("param_digest"),
            rank1.of("digest").at(0).at("param_digest"));
  EXPECT_TRUE(rank1.of("step").empty());
}

}  // namespace
}  // namespace bigmac::testing
