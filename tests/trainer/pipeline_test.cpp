// bigmac-train pipeline parallel on CPU (gates pp2 / shapes): stages reproduce the single-process
// run, cover every layer once, run every micro-batch in schedule order, and trace shapes.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

#include "train_run.h"

namespace bigmac::testing {
namespace {

constexpr int kPipelineSteps = 3;

/// Logs of one pipeline run: `stages` are the ranks of replica 0 (ranks 0..pp-1), `ranks` all.
struct PipelineRun {
  TrainLog single;
  std::vector<TrainLog> stages;
  std::vector<TrainLog> ranks;
  int micro_batches = 4;
};

/// pp × dp ranks with samples per step equal to the single run's 2 × 4: accum = 4 / dp.
PipelineRun run_pipeline(const TempDir& dir, int pp, const std::string& schedule, int dp = 1) {
  PipelineRun run;
  auto args = base_args(dir / "single.jsonl");
  args.insert(args.end(), {"--max-steps", std::to_string(kPipelineSteps)});
  EXPECT_EQ(run_single(dir.path(), args).code, 0);
  run.single = TrainLog::read(dir / "single.jsonl");

  run.micro_batches = 4 / dp;
  RankJob job(dir.path());
  job.start(pp * dp, {"--max-steps", std::to_string(kPipelineSteps), "--set",
                      "parallel.pp_size=" + std::to_string(pp), "--set",
                      "parallel.schedule=" + schedule, "--set", "trace.shapes=true", "--set",
                      "train.gradient_accumulation_steps=" + std::to_string(run.micro_batches)});
  EXPECT_TRUE(job.harness.wait_all(110000ms)) << "pipeline did not finish";
  for (int rank = 0; rank < pp * dp; ++rank) {
    EXPECT_EQ(job.harness.end(rank)->code, 0) << "rank " << rank << ": " << job.stderr_of(rank);
    run.ranks.push_back(TrainLog::read(job.log(rank)));
    if (rank < pp) run.stages.push_back(run.ranks.back());
  }
  // Replicas of a stage end with identical parameters; only replica 0's last stage logs steps.
  for (int rank = pp; rank < pp * dp; ++rank) {
    EXPECT_EQ(run.ranks[static_cast<std::size_t>(rank)].of("digest").at(0).at("param_digest"),
              run.ranks[static_cast<std::size_t>(rank % pp)].of("digest").at(0).at("param_digest"))
        << "rank " << rank;
    EXPECT_TRUE(run.ranks[static_cast<std::size_t>(rank)].of("step").empty());
  }
  return run;
}

void expect_pipeline_matches(const PipelineRun& run, int pp, const std::string& schedule) {
  const auto& last = run.stages.back();
  auto base = run.single.values("step", "loss");
  auto losses = last.values("step", "loss");
  ASSERT_EQ(losses.size(), base.size());
  for (std::size_t i = 0; i < losses.size(); ++i) {
    EXPECT_NEAR(losses[i], base[i], 1e-4 * std::abs(base[i])) << "step " << i;
  }
  const auto total = run.single.of("model").at(0).at("param_count").get<long>();
  long stage_sum = 0;
  long duplicates = 0;
  int next_layer = 0;
  for (int stage = 0; stage < pp; ++stage) {
    const auto& log = run.stages[static_cast<std::size_t>(stage)];
    auto layout = log.of("layout").at(0);
    EXPECT_EQ(layout.at("stage"), stage);
    EXPECT_EQ(layout.at("num_stages"), pp);
    EXPECT_EQ(layout.at("dp_size"), static_cast<int>(run.ranks.size()) / pp);
    EXPECT_EQ(layout.at("first_layer"), next_layer) << "layers covered once, in order";
    next_layer = layout.at("last_layer").get<int>() + 1;
    stage_sum += layout.at("param_count").get<long>();
    duplicates += layout.at("tied_duplicate_count").get<long>();
    EXPECT_EQ(log.of("model").at(0).at("param_digest"),
              run.single.of("model").at(0).at("param_digest"));
    EXPECT_EQ(log.of("step").size(),
              stage + 1 == pp ? static_cast<std::size_t>(kPipelineSteps) : 0u);
    EXPECT_EQ(log.of("loss").size(),
              stage + 1 == pp ? static_cast<std::size_t>(kPipelineSteps * run.micro_batches) : 0u)
        << "only the last stage computes a loss";

    // Every (micro-batch, phase) once per step, in the schedule's order.
    for (int step = 0; step < kPipelineSteps; ++step) {
      std::vector<std::pair<int, std::string>> seen;
      for (const auto& mb : log.of("mb")) {
        if (mb.at("global_step") == step) seen.emplace_back(mb.at("mb"), mb.at("phase"));
      }
      std::vector<std::pair<int, std::string>> expected;
      int warmup =
          schedule == "gpipe" ? run.micro_batches : std::min(pp - stage - 1, run.micro_batches);
      int f = 0, b = 0;
      while (f < warmup) expected.emplace_back(f++, "F");
      while (f < run.micro_batches) {
        expected.emplace_back(f++, "F");
        expected.emplace_back(b++, "B");
      }
      while (b < run.micro_batches) expected.emplace_back(b++, "B");
      EXPECT_EQ(seen, expected) << "stage " << stage << " step " << step;
    }
  }
  EXPECT_EQ(next_layer, 4);
  EXPECT_EQ(stage_sum - duplicates, total) << "stage counts explain the tied duplicate";
  EXPECT_EQ(duplicates, 64 * 64) << "the tied embedding, vocab x hidden, once";
}

void expect_shapes_consistent(const PipelineRun& run, int pp) {
  for (int stage = 0; stage + 1 < pp; ++stage) {
    auto sent = run.stages[static_cast<std::size_t>(stage)].of("shape");
    auto received = run.stages[static_cast<std::size_t>(stage + 1)].of("shape");
    std::map<std::pair<int, int>, nlohmann::json> exits, entries;
    for (const auto& s : sent) {
      if (s.at("where") == "exit") exits[{s.at("global_step"), s.at("mb")}] = s.at("shape");
    }
    for (const auto& s : received) {
      if (s.at("where") == "enter") entries[{s.at("global_step"), s.at("mb")}] = s.at("shape");
    }
    EXPECT_EQ(exits.size(), static_cast<std::size_t>(kPipelineSteps * run.micro_batches));
    EXPECT_EQ(exits, entries) << "stage " << stage << " exit vs stage " << stage + 1 << " entry";
  }
  for (int stage = 0; stage < pp; ++stage) {
    std::size_t labels = 0;
    for (const auto& s : run.stages[static_cast<std::size_t>(stage)].of("shape")) {
      labels += s.at("name") == "labels";
    }
    EXPECT_EQ(labels,
              stage + 1 == pp ? static_cast<std::size_t>(kPipelineSteps * run.micro_batches) : 0u);
  }
}

/// Every rank's collective ledger (`coll` events) of a healthy run: on every group each member
/// made the same calls in the same order, numbered 0, 1, 2, ...; on every channel `a->b` the
/// sender's n-th send and the receiver's n-th receive carry the same shape. Each entry names the
/// trainer's line that issued it.
void expect_ledgers_agree(const std::vector<TrainLog>& ranks) {
  // group -> rank -> (op, shape) in issue order
  std::map<std::string, std::map<int, std::vector<std::pair<std::string, nlohmann::json>>>> calls;
  for (std::size_t rank = 0; rank < ranks.size(); ++rank) {
    std::map<std::string, int> next;
    for (const auto& c : ranks[rank].of("coll")) {
      const std::string group = c.at("group");
      EXPECT_EQ(c.at("seq"), next[group]++) << "rank " << rank << ": " << c.dump();
      const std::string site = c.at("site");
      EXPECT_NE(site.find(".cpp:"), std::string::npos) << c.dump();
      EXPECT_FALSE(c.at("fn").get<std::string>().empty()) << c.dump();
      calls[group][static_cast<int>(rank)].emplace_back(c.at("op"),
                                                        c.value("shape", nlohmann::json()));
    }
  }
  ASSERT_TRUE(calls.count("world")) << "the step's world all-reduce is in every ledger";
  for (const auto& [group, by_rank] : calls) {
    if (auto arrow = group.find("->"); arrow != std::string::npos) {
      const int sender = std::stoi(group.substr(0, arrow));
      const int receiver = std::stoi(group.substr(arrow + 2));
      ASSERT_TRUE(by_rank.count(sender) && by_rank.count(receiver)) << group;
      const auto& sent = by_rank.at(sender);
      const auto& received = by_rank.at(receiver);
      ASSERT_EQ(sent.size(), received.size()) << group;
      for (std::size_t i = 0; i < sent.size(); ++i) {
        EXPECT_EQ(sent[i].first, "send") << group << " #" << i;
        EXPECT_EQ(received[i].first, "recv") << group << " #" << i;
        EXPECT_EQ(sent[i].second, received[i].second) << group << " #" << i;
      }
      continue;
    }
    const auto& first = by_rank.begin()->second;
    for (const auto& [rank, mine] : by_rank) {
      EXPECT_EQ(mine, first) << "group " << group << ": rank " << rank << " vs rank "
                             << by_rank.begin()->first;
    }
    if (group == "world") {
      EXPECT_EQ(by_rank.size(), ranks.size());
    }
  }
}

TEST(Pipeline, TwoStagesOneFOneBReproduceTheSingleProcessRun) {
  TempDir dir;
  PipelineRun run = run_pipeline(dir, 2, "1f1b");
  ASSERT_EQ(run.stages.size(), 2u);
  expect_pipeline_matches(run, 2, "1f1b");
  expect_shapes_consistent(run, 2);
}

TEST(Pipeline, TwoStagesTimesTwoReplicasReproduceTheSingleProcessRun) {
  TempDir dir;
  PipelineRun run = run_pipeline(dir, 2, "1f1b", 2);
  ASSERT_EQ(run.ranks.size(), 4u);
  expect_pipeline_matches(run, 2, "1f1b");
  expect_ledgers_agree(run.ranks);
  // The world, each stage's replicas, the activations and gradients at the cut, and the tied
  // embedding's copies between the first and last stage of each replica.
  std::set<std::string> groups;
  for (const TrainLog& log : run.ranks) {
    for (const auto& c : log.of("coll")) groups.insert(c.at("group").get<std::string>());
  }
  EXPECT_EQ(groups, (std::set<std::string>{"world", "0,2", "1,3", "0->1", "1->0", "2->3", "3->2"}));
}

TEST(Pipeline, TwoStagesTimesFourReplicasReproduceTheSingleProcessRun) {
  TempDir dir;
  PipelineRun run = run_pipeline(dir, 2, "gpipe", 4);
  ASSERT_EQ(run.ranks.size(), 8u);
  expect_pipeline_matches(run, 2, "gpipe");
}

TEST(Pipeline, FourStagesGpipeReproduceTheSingleProcessRun) {
  TempDir dir;
  PipelineRun run = run_pipeline(dir, 4, "gpipe");
  ASSERT_EQ(run.stages.size(), 4u);
  expect_pipeline_matches(run, 4, "gpipe");
  expect_shapes_consistent(run, 4);
}

}  // namespace
}  // namespace bigmac::testing
