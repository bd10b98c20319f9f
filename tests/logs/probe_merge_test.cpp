// The merge of a rank's own lines with the probe's events (issue 14 item 4): by step, the
// trainer's value wins, and every field says where it came from.
#include "logs/probe_merge.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace bigmac::logs {
namespace {

RankLog read(const std::string& text) {
  return load_text(text, "test", LogFormat::kBigmac, 0).ranks.at(0);
}

TEST(ProbeMerge, TrainersValueWinsAndTheProbeFillsTheRest) {
  RankLog trainer = read(
      R"({"ev":"step","rank":0,"global_step":0,"loss":2.5}
{"ev":"step","rank":0,"global_step":2,"loss":2.25,"lr":0.5})"
      "\n");
  RankLog probe = read(
      R"({"ev":"step","rank":0,"global_step":0,"loss":2.4,"lr":0.1,"grad_norm":1.5}
{"ev":"step","rank":0,"global_step":1,"loss":2.2,"lr":0.1,"grad_norm":1.25}
{"ev":"step","rank":0,"global_step":2,"loss":2.0,"lr":0.1,"grad_norm":1.0}
{"ev":"step","rank":0,"global_step":3,"loss":1.9,"lr":0.1,"grad_norm":0.5})"
      "\n");
  const RankLog merged = merge_probe_log(trainer, probe);
  // Step 3 lies past the trainer's last line, which may not have been read yet: left out.
  ASSERT_EQ(merged.steps.size(), 3u);
  EXPECT_EQ(*merged.steps[0].loss, 2.5);      // the trainer's
  EXPECT_EQ(*merged.steps[0].lr, 0.1);        // the probe's: the trainer logged none
  EXPECT_EQ(merged.steps[1].global_step, 1);  // a gap only the probe saw
  EXPECT_EQ(*merged.steps[1].loss, 2.2);
  EXPECT_EQ(*merged.steps[2].lr, 0.5);  // the trainer's
  EXPECT_EQ(*merged.steps[2].grad_norm, 1.0);
  EXPECT_EQ(merged.field_sources.at("loss"), "trainer (2), probe (1)");
  EXPECT_EQ(merged.field_sources.at("lr"), "trainer (1), probe (2)");
  EXPECT_EQ(merged.field_sources.at("grad_norm"), "probe");
}

TEST(ProbeMerge, ARanksOwnLossAndGradNormDoNotFillTheTrainersStepsUnderDpOrPp) {
  RankLog trainer = read(R"({"ev":"step","rank":0,"global_step":0,"loss":2.5})"
                         "\n");
  RankLog probe = read(R"({"ev":"step","rank":0,"global_step":0,"lr":0.1,"grad_norm":1.5})"
                       "\n");
  ProbeMerge how;
  how.data_parallel = 2;
  const RankLog merged = merge_probe_log(trainer, probe, how);
  EXPECT_FALSE(merged.steps.at(0).grad_norm.has_value());
  EXPECT_EQ(*merged.steps.at(0).lr, 0.1);
}

TEST(ProbeMerge, DerivesSamplesPerStepFromWhatTheProbeMeasured) {
  RankLog probe = read(
      R"({"ev":"run","rank":0,"world_size":4}
{"ev":"batch","rank":0,"input_shape":[8,16],"input_dtype":"float32"}
{"ev":"model","rank":0,"param_count":676,"param_digest":"cc764153eb05d645"}
{"ev":"step","rank":0,"global_step":0,"loss":1.5,"loss_count":2}
{"ev":"step","rank":0,"global_step":1,"loss":1.4,"loss_count":2})"
      "\n");
  ProbeMerge how;
  how.model_parallel = 2;  // 4 ranks as pp 2 × dp 2
  const RankLog merged = merge_probe_log(RankLog(), probe, how);
  ASSERT_NE(merged.batch(), nullptr);
  EXPECT_EQ(merged.batch()->micro_batch_size, 8);
  EXPECT_EQ(merged.batch()->grad_accum, 2);
  EXPECT_EQ(merged.batch()->dp, 2);
  EXPECT_EQ(merged.batch()->samples_per_step, 32);
  EXPECT_EQ(*merged.steps.at(0).samples_per_step, 32);
  EXPECT_NE(merged.field_sources.at("samples_per_step").find("derived"), std::string::npos);
  ASSERT_NE(merged.model(), nullptr);
  EXPECT_EQ(merged.model()->param_digest, "cc764153eb05d645");
  EXPECT_EQ(merged.field_sources.at("param_count"), "probe");
}

// A GAN's first step has the discriminator's two backward() calls, every later one the
// generator's too: backward() calls that change count no accumulation, nor does one step.
TEST(ProbeMerge, BackwardCallsThatChangeFromStepToStepDeriveNothing) {
  const std::string head = R"({"ev":"run","rank":0,"world_size":1}
{"ev":"batch","rank":0,"input_shape":[8,3,64,64],"input_dtype":"float32"}
{"ev":"step","rank":0,"global_step":0,"loss":2.3,"loss_count":2}
)";
  EXPECT_EQ(merge_probe_log(RankLog(), read(head), ProbeMerge{}).batch(), nullptr);
  const RankLog gan =
      read(head + R"({"ev":"step","rank":0,"global_step":1,"loss":3.1,"loss_count":3}
)");
  const RankLog merged = merge_probe_log(RankLog(), gan, ProbeMerge{});
  EXPECT_EQ(merged.batch(), nullptr);
  EXPECT_FALSE(merged.steps.at(1).samples_per_step.has_value());
}

TEST(ProbeMerge, WithoutLossCountNoBatchArithmeticIsClaimed) {
  RankLog probe = read(R"({"ev":"batch","rank":0,"input_shape":[8,16]}
{"ev":"step","rank":0,"global_step":0,"loss":1.5})"
                       "\n");
  const RankLog merged = merge_probe_log(RankLog(), probe);
  EXPECT_EQ(merged.batch(), nullptr);
  EXPECT_FALSE(merged.steps.at(0).samples_per_step.has_value());
}

TEST(ProbeMerge, ARankWhoseTrainerLogsNoStepsGetsNoneFromTheProbeWhenAnotherRankOwnsThem) {
  RankLog probe = read(R"({"ev":"step","rank":0,"global_step":0,"grad_norm":1.0}
{"ev":"heartbeat","rank":0,"global_step":0})"
                       "\n");
  ProbeMerge how;
  how.steps_logged_elsewhere = true;
  const RankLog merged = merge_probe_log(RankLog(), probe, how);
  EXPECT_TRUE(merged.steps.empty());
  EXPECT_EQ(merged.heartbeats.size(), 1u);  // progress still counts
}

TEST(ProbeMerge, ReplicaLossesAreAveraged) {
  RankLog a = read(R"({"ev":"step","rank":0,"global_step":0,"loss":1.0}
{"ev":"step","rank":0,"global_step":1,"loss":3.0})"
                   "\n");
  RankLog b = read(R"({"ev":"step","rank":0,"global_step":0,"loss":2.0})"
                   "\n");
  RankLog merged = merge_probe_log(RankLog(), a);
  EXPECT_EQ(average_replica_losses(merged, {&a, &b}, 2), 1);
  EXPECT_EQ(*merged.steps.at(0).loss, 1.5);
  // b has not logged step 1 (yet): rank 0's own loss is not the run's, so none is claimed.
  EXPECT_FALSE(merged.steps.at(1).loss.has_value());
  EXPECT_EQ(merged.field_sources.at("loss"), "probe (mean over 2 replicas)");
}

TEST(ProbeMerge, ALossIsClaimedOnlyOnceEveryExpectedReplicaLoggedIt) {
  // Live, under four-way data parallelism, only two replicas have logged step 0 so far: their
  // mean is not the run's loss either (an early stop judged it as a divergence).
  RankLog a = read(R"({"ev":"step","rank":0,"global_step":0,"loss":1.0})"
                   "\n");
  RankLog b = read(R"({"ev":"step","rank":1,"global_step":0,"loss":2.0})"
                   "\n");
  RankLog merged = merge_probe_log(RankLog(), a);
  EXPECT_EQ(average_replica_losses(merged, {&a, &b}, 4), 0);
  EXPECT_FALSE(merged.steps.at(0).loss.has_value());
  RankLog alone = merge_probe_log(RankLog(), a);
  EXPECT_EQ(average_replica_losses(alone, {&a}, 4), 0);
  EXPECT_FALSE(alone.steps.at(0).loss.has_value());
}

// A pipelining stage the probe read (docs/pipelines.md): its layout, passes, losses and the
// shapes at its boundaries are the rank's; its point-to-point shapes, which carry no stage and
// describe the same tensors, are not.
TEST(ProbeMerge, APipelineStagesEventsAreTheRanksAndItsTransfersGiveWay) {
  RankLog probe = read(
      R"({"ev":"layout","rank":1,"stage":1,"num_stages":2,"first_layer":2,"last_layer":3,"param_count":10,"schedule":"gpipe"}
{"ev":"shape","rank":1,"global_step":0,"mb":0,"where":"recv","name":"p2p","shape":[2,6,16]}
{"ev":"shape","rank":1,"global_step":0,"stage":1,"mb":0,"where":"enter","name":"hidden_states","shape":[2,6,16]}
{"ev":"mb","rank":1,"global_step":0,"stage":1,"mb":0,"phase":"F","start":1.0,"end":2.0}
{"ev":"loss","rank":1,"global_step":0,"stage":1,"mb":0,"value":3.5})"
      "\n");
  ProbeMerge how;
  how.model_parallel = 2;
  const RankLog none;
  const RankLog merged = merge_probe_log(none, probe, how);
  ASSERT_EQ(merged.layouts.size(), 1u);
  EXPECT_EQ(merged.layouts[0].schedule, "gpipe");
  ASSERT_EQ(merged.shapes.size(), 1u);
  EXPECT_EQ(merged.shapes[0].where, "enter");
  EXPECT_EQ(merged.micro_batches.size(), 1u);
  ASSERT_EQ(merged.losses.size(), 1u);
  EXPECT_EQ(merged.losses[0].value, 3.5);
  EXPECT_EQ(merged.field_sources.at("layouts"), "probe");
  EXPECT_EQ(merged.field_sources.at("stage_losses"), "probe");
  // A trainer that logs its own layout keeps it.
  RankLog trainer =
      read(R"({"ev":"layout","rank":1,"stage":1,"num_stages":2,"first_layer":3,"last_layer":3})"
           "\n");
  EXPECT_EQ(merge_probe_log(trainer, probe, how).layouts.at(0).first_layer, 3);
}

// Each stage's probe counts its own parameters and sees its own input: the whole model and the
// run's batch are the stages' together, and only once every rank logged its part.
TEST(ProbeMerge, APipelinesModelAndBatchAreTheStagesTogether) {
  RankLog first = read(
      R"({"ev":"run","rank":0,"world_size":2}
{"ev":"layout","rank":0,"stage":0,"num_stages":2,"first_layer":0,"last_layer":1,"param_count":6}
{"ev":"batch","rank":0,"input_shape":[2,6],"input_dtype":"int64"}
{"ev":"model","rank":0,"param_count":6,"param_digest":"00000000000000aa"}
{"ev":"step","rank":0,"global_step":0,"loss_count":0}
{"ev":"step","rank":0,"global_step":1,"loss_count":0})"
      "\n");
  RankLog last = read(
      R"({"ev":"run","rank":1,"world_size":2}
{"ev":"layout","rank":1,"stage":1,"num_stages":2,"first_layer":2,"last_layer":3,"param_count":4}
{"ev":"batch","rank":1,"input_shape":[2,6,16],"input_dtype":"float32"}
{"ev":"model","rank":1,"param_count":4,"param_digest":"00000000000000bb"}
{"ev":"step","rank":1,"global_step":0,"loss":3.5,"loss_count":4}
{"ev":"step","rank":1,"global_step":1,"loss":3.0,"loss_count":4})"
      "\n");
  last.rank = 1;
  StageCombination how;
  how.ranks = 2;
  RankLog rank0 = first;
  combine_stage_structure(rank0, {&first}, how);
  EXPECT_TRUE(rank0.models.empty()) << "one stage's part is not the whole model";
  combine_stage_structure(rank0, {&first, &last}, how);
  ASSERT_EQ(rank0.models.size(), 1u);
  EXPECT_EQ(rank0.models[0].param_count, 10);
  EXPECT_EQ(rank0.models[0].param_digest.size(), 16u);
  RankLog rank1 = last;
  combine_stage_structure(rank1, {&first, &last}, how);
  EXPECT_EQ(rank1.models.at(0).param_digest, rank0.models[0].param_digest) << "equal on every rank";
  ASSERT_EQ(rank0.batches.size(), 1u);
  const BatchRecord& b = rank0.batches[0];
  EXPECT_EQ(b.input_shape, (std::vector<std::int64_t>{2, 6}));  // the first stage's input
  EXPECT_EQ(b.input_dtype, "int64");
  EXPECT_EQ((std::vector<std::int64_t>{b.micro_batch_size, b.grad_accum, b.dp, b.samples_per_step}),
            (std::vector<std::int64_t>{2, 4, 1, 8}));
  EXPECT_EQ(rank0.steps.at(1).samples_per_step, 8);
  EXPECT_EQ(rank1.batches.at(0).input_shape, b.input_shape);
  RankLog other = last;
  other.models[0].param_digest = "00000000000000cc";
  RankLog changed = first;
  combine_stage_structure(changed, {&first, &other}, how);
  EXPECT_NE(changed.models.at(0).param_digest, rank0.models[0].param_digest);
}

// A stage's squared gradient norm is read: the stages' sum is the model's (combine_stage_values).
TEST(ProbeMerge, AStagesSquaredNormAndUnknownLayersAreRead) {
  const RankLog log = read(
      R"({"ev":"step","rank":0,"global_step":0,"grad_norm":2.0,"grad_norm_sq":4.0}
{"ev":"layout","rank":0,"stage":0,"num_stages":2,"first_layer":-1,"last_layer":-1,"layers_unknown":"no index"})"
      "\n");
  ASSERT_EQ(log.steps.size(), 1u);
  const auto& extra = log.steps[0].extra;
  EXPECT_NE(
      std::find(extra.begin(), extra.end(), std::pair<std::string, double>{"grad_norm_sq", 4.0}),
      extra.end());
  EXPECT_EQ(log.layouts.at(0).layers_unknown, "no index");
}

// A hand-written pipeline's ranks know their neighbours; the stages are counted along the chain.
TEST(ProbeMerge, AHandWrittenPipelinesStagesAreCountedAlongItsTransfers) {
  std::map<int, RankLog> all;
  const char* lines[] = {
      R"({"ev":"layout","rank":0,"stage":0,"prev_rank":-1,"next_rank":2,"num_stages":0})",
      R"({"ev":"layout","rank":1,"stage":-1,"prev_rank":2,"next_rank":-1,"num_stages":0}
{"ev":"loss","rank":1,"global_step":0,"stage":-1,"mb":0,"value":0.5}
{"ev":"shape","rank":1,"global_step":0,"mb":0,"where":"recv","name":"p2p","peer":2,"shape":[2,16]})",
      R"({"ev":"layout","rank":2,"stage":-1,"prev_rank":0,"next_rank":1,"num_stages":0})"};
  for (int r = 0; r < 3; ++r) {
    all[r] = load_text(std::string(lines[r]) + "\n", "test", LogFormat::kBigmac, r).ranks.at(0);
  }
  RankLog last = all.at(1);
  resolve_chain_stages(last, all);
  EXPECT_EQ(last.layouts.at(0).stage, 2);
  EXPECT_EQ(last.layouts.at(0).num_stages, 3);
  EXPECT_EQ(last.losses.at(0).stage, 2);
  EXPECT_EQ(last.shapes.at(0).stage, 2);  // a transfer's shape: no stage of its own
  EXPECT_EQ(last.shapes.at(0).peer, 2);
  RankLog middle = all.at(2);
  resolve_chain_stages(middle, all);
  EXPECT_EQ(middle.layouts.at(0).stage, 1);
  RankLog head = all.at(0);
  resolve_chain_stages(head, all);
  EXPECT_EQ(head.layouts.at(0).stage, 0);
  EXPECT_EQ(head.layouts.at(0).num_stages, 3);
  RankLog unchained = load_text(R"({"ev":"layout","rank":0,"stage":0,"num_stages":0})"
                                "\n",
                                "test", LogFormat::kBigmac, 0)
                          .ranks.at(0);
  resolve_chain_stages(unchained, all);  // a trainer's own layout: no neighbours, not a chain
  EXPECT_EQ(unchained.layouts.at(0).num_stages, 0);
  RankLog alone = all.at(1);
  std::map<int, RankLog> partial{{1, all.at(1)}};
  resolve_chain_stages(alone, partial);  // rank 2 not logged yet
  EXPECT_EQ(alone.layouts.at(0).stage, -1);
  EXPECT_EQ(alone.losses.at(0).stage, -1);
}

}  // namespace
}  // namespace bigmac::logs
