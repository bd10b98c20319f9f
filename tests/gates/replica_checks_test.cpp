// gates/replica_checks and process_checks' fresh_start: the invariants of data parallelism and
// a fresh start, judged from each rank's own digests and loads.

#include "gates/replica_checks.h"

#include <gtest/gtest.h>

#include "gates/process_checks.h"
#include "record_builder.h"

namespace bigmac::gates {
namespace {

using namespace testing;

// Two replicas with the probe's digests: parameters equal after each step, inputs apart.
GateEvidence two_replicas() {
  GateEvidence e;
  for (int r = 0; r < 2; ++r) {
    e.add_rank(r, healthy_rank(r, 2, 3, r == 0, 2, 2, 2), clean_exit());
    RankEvidence& rank = e.ranks.back();
    rank.probe_ran = true;
    for (std::int64_t s = 0; s < 3; ++s) {
      rank.step_digests.push_back({s,
                                   0x1000u + static_cast<std::uint64_t>(10 * s + r),
                                   0x2000u + static_cast<std::uint64_t>(s),
                                   at(r, 30 + s),
                                   {},
                                   {}});
    }
  }
  return e;
}

TEST(ReplicasInSync, EqualParametersAfterEveryDigestedStepPass) {
  const GatePlan p = plan("dp");
  const CheckResult r = run_check(check_replicas_in_sync, two_replicas(), plan("dp"));
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_NE(r.message.find("at the 3 digested steps"), std::string::npos) << r.message;
}

// A model not wrapped in DDP: each replica applies its own gradients, apart from step 0 on.
TEST(ReplicasInSync, ReplicasThatDriftApartFailAtTheFirstStepWithBothRanks) {
  GateEvidence e = two_replicas();
  e.ranks[1].step_digests[1].param = 0x9999;
  e.ranks[1].step_digests[2].param = 0x8888;
  const CheckResult r = run_check(check_replicas_in_sync, e, plan("dp"));
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("different parameters after step 1"), std::string::npos) << r.message;
  ASSERT_EQ(r.evidence.size(), 2u);
  EXPECT_EQ(r.evidence[0].rank, 0);
  EXPECT_EQ(r.evidence[1].rank, 1);
  EXPECT_EQ(r.certain_at, 1);
}

TEST(ReplicasInSync, WithoutDigestsItIsUnobservableAndWithOneReplicaTrivial) {
  GateEvidence e = two_replicas();
  for (RankEvidence& r : e.ranks) r.step_digests.clear();
  EXPECT_FALSE(run_check(check_replicas_in_sync, e, plan("dp")).unobservable.empty());
  EXPECT_TRUE(run_check(check_replicas_in_sync, single_evidence(3), plan("single")).passed);
}

// BatchNorm statistics: DDP with broadcast_buffers (the default) hands every forward rank 0's;
// without it each replica keeps its own, which warns (evaluation and checkpoints differ) but
// never fails: the parameters agree.
TEST(BuffersInSync, BuffersApartWhileTheParametersAgreeWarnAndPass) {
  GateEvidence e = two_replicas();
  EXPECT_NE(run_check(check_buffers_in_sync, e, plan("dp")).message.find("not applicable"),
            std::string::npos)
      << "no buffer digests: a model without buffers";
  for (RankEvidence& rank : e.ranks) {
    for (auto& d : rank.step_digests) d.buffers = 0x3000u + static_cast<std::uint64_t>(d.step);
  }
  CheckResult r = run_check(check_buffers_in_sync, e, plan("dp"));
  EXPECT_TRUE(r.passed);
  EXPECT_TRUE(r.warning.empty()) << r.warning;
  EXPECT_NE(r.message.find("the same buffers at the 3 digested steps"), std::string::npos)
      << r.message;
  e.ranks[1].step_digests[1].buffers = 0x7777;
  e.ranks[1].step_digests[2].buffers = 0x6666;
  r = run_check(check_buffers_in_sync, e, plan("dp"));
  EXPECT_TRUE(r.passed) << "a warning, not a failure";
  EXPECT_FALSE(r.certain_at.has_value());
  EXPECT_NE(r.warning.find("at step 1 rank 0's forward read buffers 0000000000003001 and rank "
                           "1's 0000000000007777"),
            std::string::npos)
      << r.warning;
  EXPECT_NE(r.warning.find("SyncBatchNorm"), std::string::npos) << r.warning;
  ASSERT_EQ(r.evidence.size(), 2u);
  EXPECT_EQ(r.evidence[1].rank, 1);
  // Parameters apart too: replicas_in_sync fails, and this check says nothing more.
  e.ranks[1].step_digests[2].param = 0x9999;
  r = run_check(check_buffers_in_sync, e, plan("dp"));
  EXPECT_TRUE(r.passed);
  EXPECT_TRUE(r.warning.empty()) << r.warning;
  EXPECT_NE(r.message.find("replicas_in_sync"), std::string::npos) << r.message;
}

// A sampler told there is one replica: both ranks read the same samples.
TEST(NoDuplicateSamples, TwoRanksReadingTheSameMicroBatchFail) {
  EXPECT_TRUE(run_check(check_no_duplicate_samples, two_replicas(), plan("dp")).passed);
  GateEvidence e = two_replicas();
  for (std::size_t s = 0; s < 3; ++s)
    e.ranks[1].step_digests[s].input = e.ranks[0].step_digests[s].input;
  const CheckResult r = run_check(check_no_duplicate_samples, e, plan("dp"));
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("ranks 0 and 1 consumed the same micro-batch at step 0"),
            std::string::npos)
      << r.message;
  EXPECT_EQ(r.certain_at, 0);
}

// Replicas in sync, reading different micro-batches, from the baseline's start: the data order
// depends on the layout only when the first step's loss (its samples' alone) is not the
// baseline's; a gradient fault (summed, not averaged) leaves that loss as it is.
TEST(LayoutDependentOrder, IsSaidOnlyWhenTheFirstStepsLossIsNotTheBaselines) {
  const baseline::Baseline base = baseline_of(single_evidence(3));
  ASSERT_TRUE(base.steps.front().loss);
  GateEvidence e = two_replicas();
  const GatePlan p = plan("dp");
  e.ranks[0].steps[0].loss = *base.steps.front().loss * (1 + 1e-7);  // another reduction order
  EXPECT_FALSE(layout_dependent_order(CheckContext{e, p, &base, CheckParams({})}));
  e.ranks[0].steps[0].loss = *base.steps.front().loss * 1.01;
  const auto why = layout_dependent_order(CheckContext{e, p, &base, CheckParams({})});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("the first step's loss is"), std::string::npos) << *why;
  EXPECT_NE(why->find("the replicas stay in sync (3 digested steps)"), std::string::npos) << *why;
}

// The baseline's sample sets: step s consumed samples 16s .. 16s+15, each hashed to h(i).
std::uint64_t sample_hash(std::int64_t i) {
  return 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(i + 1);
}

baseline::Baseline baseline_with_samples(int steps = 3) {
  baseline::Baseline base = baseline_of(single_evidence(steps));
  for (baseline::BaselineStep& s : base.steps) {
    std::uint64_t sum = 0;
    for (std::int64_t i = 16 * s.global_step; i < 16 * s.global_step + 16; ++i)
      sum += sample_hash(i);
    s.sample_count = 16;
    s.sample_digest = sum;
    s.sample_repeats = 0;  // the single process read each sample once
  }
  return base;
}

// Rank r of two reads `per_rank` samples of step s starting at `first(s, r)`.
template <class First>
void give_samples(GateEvidence& e, std::int64_t per_rank, First first) {
  for (int r = 0; r < 2; ++r) {
    for (logs::RankLog::StepDigests& d : e.ranks[static_cast<std::size_t>(r)].step_digests) {
      std::uint64_t sum = 0;
      d.sample_hashes.clear();
      for (std::int64_t i = first(d.step, r); i < first(d.step, r) + per_rank; ++i) {
        sum += sample_hash(i);
        d.sample_hashes.push_back(sample_hash(i));
      }
      d.sample_count = per_rank;
      d.sample_digest = sum;
    }
  }
}

TEST(SampleCoverage, TheBaselinesSamplesSplitOverTheRanksPassAndKeepTheComparisonStepByStep) {
  const baseline::Baseline base = baseline_with_samples();
  GateEvidence e = two_replicas();
  give_samples(e, 8, [](std::int64_t s, int r) { return 16 * s + 8 * r; });
  const GatePlan p = plan("dp");
  const CheckResult r = run_check(check_sample_coverage, e, p, &base);
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_NE(r.message.find("exactly the baseline's samples at all 3 steps"), std::string::npos)
      << r.message;
  // Even with a first loss apart (a fault of the loss), the data is the baseline's: no band.
  e.ranks[0].steps[0].loss = *base.steps.front().loss * 1.01;
  EXPECT_EQ(judge_data_order(CheckContext{e, p, &base, CheckParams({})}).kind,
            DataOrder::kStepByStep);
  // Unless the model has buffers (BatchNorm): the same samples grouped into other
  // micro-batches are normalised by other statistics, so the loss is the layout's.
  for (RankEvidence& rank : e.ranks) {
    for (auto& d : rank.step_digests) d.buffers = 0x3000u + static_cast<std::uint64_t>(d.step);
  }
  const DataOrder order = judge_data_order(CheckContext{e, p, &base, CheckParams({})});
  EXPECT_EQ(order.kind, DataOrder::kBand) << order.why;
  EXPECT_NE(order.why.find("the loss depends on how a step's samples are grouped"),
            std::string::npos)
      << order.why;
  EXPECT_NE(order.why.find("every step consumes exactly the baseline's samples, yet the first "
                           "step's loss"),
            std::string::npos)
      << order.why;
  e.ranks[0].steps[0].loss = *base.steps.front().loss;
  EXPECT_EQ(judge_data_order(CheckContext{e, p, &base, CheckParams({})}).kind,
            DataOrder::kStepByStep)
      << "the first loss the baseline's: grouping makes no difference";
}

// The ragged micro-batch: each rank's last one is a sample short.
TEST(SampleCoverage, ACountThatIsNotTheBaselinesFailsAtThatStepNamingEveryRank) {
  const baseline::Baseline base = baseline_with_samples();
  GateEvidence e = two_replicas();
  give_samples(e, 7, [](std::int64_t s, int r) { return 16 * s + 8 * r; });
  const CheckResult r = run_check(check_sample_coverage, e, plan("dp"), &base);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("step 0 consumed 14 samples over the ranks that read input (rank 0: "
                           "7, rank 1: 7), the baseline's step 16"),
            std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("2 were dropped"), std::string::npos) << r.message;
  EXPECT_EQ(r.certain_at, 0);
  EXPECT_EQ(r.route_back, "dp");
}

// A sampler that deals samples to ranks: as many, other ones; the order is the layout's.
TEST(SampleCoverage, AsManyOtherSamplesPassAndProveTheOrderDependsOnTheLayout) {
  const baseline::Baseline base = baseline_with_samples();
  GateEvidence e = two_replicas();
  give_samples(e, 8, [](std::int64_t s, int r) { return 16 * s + 8 * r + 1000; });
  const GatePlan p = plan("dp");
  const CheckResult r = run_check(check_sample_coverage, e, p, &base);
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_NE(r.message.find("but other ones from step 0"), std::string::npos) << r.message;
  const DataOrder order = judge_data_order(CheckContext{e, p, &base, CheckParams({})});
  EXPECT_EQ(order.kind, DataOrder::kBand) << order.why;
  EXPECT_NE(order.why.find("consume as many samples as the baseline but other ones"),
            std::string::npos)
      << order.why;
}

// Each rank draws from the whole data set (a per-rank seed, no sharded sampler): as many samples
// a step as the baseline, other ones, and rank 0 reads at step 1 what rank 1 read at step 0.
TEST(SampleCoverage, SamplesReadTwiceWhereTheBaselineReadEachOnceFailWithBothReads) {
  const baseline::Baseline base = baseline_with_samples();
  GateEvidence e = two_replicas();
  give_samples(e, 8, [](std::int64_t s, int r) { return 8 * (s + r); });
  const GatePlan p = plan("dp");
  const CheckResult r = run_check(check_sample_coverage, e, p, &base);
  EXPECT_FALSE(r.passed) << r.message;
  EXPECT_NE(r.message.find("rank 0 at step 1 read a sample rank 1 had read at step 0"),
            std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("over the first 3 steps the 2 ranks that read input read 16 of their "
                           "48 samples again"),
            std::string::npos)
      << r.message;
  ASSERT_EQ(r.evidence.size(), 2u);
  EXPECT_EQ(r.evidence[0].rank, 1);
  EXPECT_EQ(r.evidence[1].rank, 0);
  EXPECT_EQ(r.certain_at, 1);
  EXPECT_EQ(r.route_back, "dp");
  // No band for it: the data order is not what differs, the coverage is.
  EXPECT_EQ(judge_data_order(CheckContext{e, p, &base, CheckParams({})}).kind,
            DataOrder::kStepByStep);
}

// A DistributedSampler pads an epoch with up to world size - 1 samples read again: allowed.
// Without the baseline's count of repeats (an older baseline) or a rank's per-sample hashes,
// nothing is said of repeats.
TEST(SampleCoverage, AnEpochsPaddingPassesAndMissingHashesSayNothingOfRepeats) {
  const baseline::Baseline base = baseline_with_samples();
  GateEvidence e = two_replicas();
  give_samples(e, 8, [](std::int64_t s, int r) { return 16 * s + 8 * r + 1000; });
  e.ranks[1].step_digests[2].sample_hashes.back() = e.ranks[0].step_digests[0].sample_hashes[0];
  const CheckResult padded = run_check(check_sample_coverage, e, plan("dp"), &base);
  EXPECT_TRUE(padded.passed) << padded.message;
  EXPECT_NE(padded.message.find("over the first 3 steps they read each of their 48 samples once "
                                "but 1 (an epoch's padding, at most 1)"),
            std::string::npos)
      << padded.message;
  give_samples(e, 8, [](std::int64_t s, int r) { return 8 * (s + r); });
  baseline::Baseline old = base;
  for (baseline::BaselineStep& s : old.steps) s.sample_repeats.reset();
  const CheckResult unknown = run_check(check_sample_coverage, e, plan("dp"), &old);
  EXPECT_TRUE(unknown.passed) << unknown.message;
  EXPECT_EQ(unknown.message.find("read each"), std::string::npos) << unknown.message;
  // Rank 1 logged no hashes at step 1: only step 0 is compared, and it reads no sample twice.
  e.ranks[1].step_digests[1].sample_hashes.clear();
  const CheckResult step0 = run_check(check_sample_coverage, e, plan("dp"), &base);
  EXPECT_TRUE(step0.passed) << step0.message;
  EXPECT_NE(step0.message.find("over the first 1 steps they read each of their 16 samples once"),
            std::string::npos)
      << step0.message;
}

// Live: rank 0's sample set of step 0 is in, rank 1's not yet. Nothing may be certain on it.
TEST(SampleCoverage, ASetNotInFromEveryRankYetLeavesTheDataOrderPending) {
  const baseline::Baseline base = baseline_with_samples();
  GateEvidence e = two_replicas();
  give_samples(e, 7, [](std::int64_t s, int r) { return 16 * s + 8 * r; });
  for (RankEvidence& rank : e.ranks) rank.step_digests.resize(1);
  e.ranks[1].step_digests.clear();
  const GatePlan p = plan("dp");
  const CheckResult r = run_check(check_sample_coverage, e, p, &base);
  EXPECT_FALSE(r.unobservable.empty()) << r.message;
  EXPECT_EQ(judge_data_order(CheckContext{e, p, &base, CheckParams({})}).kind, DataOrder::kPending);
}

TEST(SampleCoverage, NoSetsOrAnInputWhoseFirstDimensionIsNotTheBatchAreNotJudged) {
  const baseline::Baseline base = baseline_with_samples();
  GateEvidence e = two_replicas();
  EXPECT_FALSE(run_check(check_sample_coverage, e, plan("dp"), &base).unobservable.empty());
  // Sequence-first [35, 20] in the baseline, [35, 10] per rank: rows are time steps.
  baseline::Baseline seq_first = base;
  seq_first.structure.input_shape = {35, 20};
  give_samples(e, 7, [](std::int64_t s, int r) { return 16 * s + 8 * r; });
  for (RankEvidence& rank : e.ranks) {
    rank.batches.clear();
    logs::BatchRecord b;
    b.at = at(rank.rank, 3);
    b.input_shape = {35, 10};
    rank.batches.push_back(b);
  }
  const CheckResult r = run_check(check_sample_coverage, e, plan("dp"), &seq_first);
  EXPECT_TRUE(r.passed) << r.message;
  EXPECT_NE(r.message.find("not applicable: rank 0's input is 35x10, the baseline's 35x20"),
            std::string::npos)
      << r.message;
}

TEST(FreshStart, ALoadOfACheckpointAnEarlierGateWroteFailsBeforeStepZero) {
  GateEvidence e = two_replicas();
  e.ranks[0].loads.push_back(logs::LoadRecord{at(0, 5), "/w/ckpt/checkpoint.pth.tar", 0});
  EXPECT_TRUE(run_check(check_fresh_start, e, plan("dp")).passed);  // its own file, not a gate's
  e.earlier_checkpoints["/w/ckpt/checkpoint.pth.tar"] = "gate single (attempt 1), step 15";
  const CheckResult r = run_check(check_fresh_start, e, plan("dp"));
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("rank 0 resumed /w/ckpt/checkpoint.pth.tar, which gate single "
                           "(attempt 1), step 15 wrote"),
            std::string::npos)
      << r.message;
  EXPECT_EQ(r.certain_at, -1);
  // Without the probe nothing says what was loaded.
  for (RankEvidence& rank : e.ranks) {
    rank.probe_ran = false;
    rank.loads.clear();
  }
  EXPECT_FALSE(run_check(check_fresh_start, e, plan("dp")).unobservable.empty());
}

}  // namespace
}  // namespace bigmac::gates
