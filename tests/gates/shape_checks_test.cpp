#include "gates/shape_checks.h"

#include <gtest/gtest.h>

#include "record_builder.h"

namespace bigmac::gates {
namespace {

using namespace testing;

class ShapeChecks : public ::testing::Test {
 protected:
  GatePlan plan_ = plan("shapes");
  GateEvidence good_ = pipeline_evidence(2, 4, 1, "1f1b");

  logs::ShapeRecord* find(GateEvidence& e, int stage, int mb, const std::string& where) {
    for (auto& s : e.ranks[static_cast<std::size_t>(stage)].shapes) {
      if (s.mb == mb && s.where == where) return &s;
    }
    return nullptr;
  }
};

TEST_F(ShapeChecks, ShapeChain) {
  const CheckResult ok = run_check(check_shape_chain, good_, plan_);
  EXPECT_TRUE(ok.passed) << ok.message;
  EXPECT_NE(ok.message.find("4 stage boundaries"), std::string::npos);
  EXPECT_FALSE(run_check(check_shape_chain, single_evidence(), plan_).passed);  // nothing traced

  GateEvidence trimmed = good_;
  find(trimmed, 1, 2, "enter")->shape = {2, 31, 64};
  const CheckResult r = run_check(check_shape_chain, trimmed, plan_);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(
      r.message.find("micro-batch 2: stage 0 exits [2,32,64] float32 but stage 1 enters [2,31,64]"),
      std::string::npos)
      << r.message;
  EXPECT_EQ(r.evidence.size(), 2u);

  GateEvidence dtype = good_;
  find(dtype, 1, 0, "enter")->dtype = "bfloat16";
  EXPECT_FALSE(run_check(check_shape_chain, dtype, plan_).passed);
}

TEST_F(ShapeChecks, FixedSeqLength) {
  EXPECT_TRUE(run_check(check_fixed_seq_length, good_, plan_).passed);
  EXPECT_FALSE(run_check(check_fixed_seq_length, GateEvidence{}, plan_).passed);
  GateEvidence ragged = good_;
  find(ragged, 0, 3, "exit")->shape = {2, 20, 64};
  const CheckResult r = run_check(check_fixed_seq_length, ragged, plan_);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("sequence length 20, expected 32"), std::string::npos) << r.message;

  // A command never given train.seq_length, logging none: its dimension 1 may be an MLP's
  // features, so no length is judged, in either direction.
  GatePlan no_seq = plan_;
  no_seq.config.trainer.kind = "command";
  no_seq.config.trainer.command = {"python3", "train.py", "--steps", "{max_steps}"};
  GateEvidence unlogged = ragged;
  for (auto& rank : unlogged.ranks) {
    for (auto& b : rank.batches) b.seq_length = 0;
  }
  const CheckResult unknown = run_check(check_fixed_seq_length, unlogged, no_seq);
  EXPECT_FALSE(unknown.passed);
  ASSERT_EQ(unknown.unobservable.size(), 1u) << unknown.message;
  EXPECT_EQ(unknown.unobservable[0].field, "seq_length");
  EXPECT_NE(unknown.message.find("not given train.seq_length"), std::string::npos)
      << unknown.message;
  EXPECT_FALSE(run_check(check_fixed_seq_length, ragged, no_seq).passed);  // its own length, 32
  no_seq.config.trainer.command.push_back("--seq-len={seq_length}");
  EXPECT_FALSE(run_check(check_fixed_seq_length, ragged, no_seq).passed);  // given: judged
  EXPECT_TRUE(run_check(check_fixed_seq_length, good_, no_seq).passed);
}

// A hand-written pipeline's transfers (the probe's `p2p` shapes): each send is paired with its
// peer's receive of the same index, forward and backward; labels are not known.
TEST_F(ShapeChecks, PointToPointTransfersArePairedByTheirPeers) {
  GateEvidence e = single_evidence();
  e.ranks.push_back(e.ranks[0]);
  e.ranks[1].rank = 1;
  const auto transfer = [](int rank, int stage, const char* where, int peer, int mb,
                           std::vector<std::int64_t> shape) {
    logs::ShapeRecord s{at(rank, 50 + mb), 0,         stage, mb, where, "p2p",
                        std::move(shape),  "float32", "cpu"};
    s.peer = peer;
    return s;
  };
  for (int mb = 0; mb < 2; ++mb) {
    e.ranks[0].shapes.push_back(transfer(0, 0, "send", 1, mb, {2, 16}));  // activations
    e.ranks[1].shapes.push_back(transfer(1, 1, "recv", 0, mb, {2, 16}));
    e.ranks[1].shapes.push_back(transfer(1, 1, "send", 0, mb, {2, 16}));  // gradients
    e.ranks[0].shapes.push_back(transfer(0, 0, "recv", 1, mb, {2, 16}));
  }
  const CheckResult ok = run_check(check_shape_chain, e, plan_);
  EXPECT_TRUE(ok.passed) << ok.message;
  EXPECT_NE(ok.message.find("4 stage boundaries"), std::string::npos) << ok.message;
  const CheckResult labels = run_check(check_labels_last_stage_only, e, plan_);
  EXPECT_FALSE(labels.passed);
  EXPECT_EQ(labels.unobservable.size(), 1u) << labels.message;

  GateEvidence trimmed = e;
  trimmed.ranks[1].shapes[2].shape = {2, 15};  // rank 1 receives mb 1 into a shorter tensor
  const CheckResult r = run_check(check_shape_chain, trimmed, plan_);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("transfer 1 from rank 0 to rank 1: sent [2,16] float32 but received "
                           "into [2,15] float32"),
            std::string::npos)
      << r.message;
}

TEST_F(ShapeChecks, LabelsLastStageOnly) {
  EXPECT_TRUE(run_check(check_labels_last_stage_only, good_, plan_).passed);
  EXPECT_FALSE(run_check(check_labels_last_stage_only, single_evidence(), plan_).passed);
  GateEvidence early = good_;
  early.ranks[0].shapes.push_back(
      logs::ShapeRecord{at(0, 99), 0, 0, 0, "labels", "labels", {2, 32}, "int64", "cpu"});
  EXPECT_NE(run_check(check_labels_last_stage_only, early, plan_)
                .message.find("labels logged on stage 0"),
            std::string::npos);
  GateEvidence mismatch = good_;
  find(mismatch, 1, 1, "labels")->shape = {2, 16};
  EXPECT_NE(
      run_check(check_labels_last_stage_only, mismatch, plan_).message.find("do not match logits"),
      std::string::npos);
}

TEST_F(ShapeChecks, NoMiddleStageLoss) {
  EXPECT_TRUE(run_check(check_no_middle_stage_loss, good_, plan_).passed);
  EXPECT_FALSE(run_check(check_no_middle_stage_loss, single_evidence(), plan_).passed);
  GateEvidence middle = good_;
  middle.ranks[0].losses.push_back(logs::LossRecord{at(0, 77), 0, 0, 1, 3.9});
  const CheckResult r = run_check(check_no_middle_stage_loss, middle, plan_);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.message.find("stage 0 computed a loss at step 0 micro-batch 1"), std::string::npos)
      << r.message;
}

}  // namespace
}  // namespace bigmac::gates
