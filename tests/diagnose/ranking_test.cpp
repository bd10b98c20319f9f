#include "diagnose/ranking.h"

#include <gtest/gtest.h>

namespace bigmac::diagnose {
namespace {

Diagnosis make(std::string id, int specificity, int rank, double t = 0, double confidence = 0.5) {
  Diagnosis d;
  d.id = std::move(id);
  d.specificity = specificity;
  d.failed_rank = rank;
  d.confidence = confidence;
  d.evidence.push_back(Evidence{rank, "f.log", 1, t, "line"});
  return d;
}

std::vector<std::string> ids(const std::vector<Diagnosis>& all) {
  std::vector<std::string> out;
  for (const Diagnosis& d : all) out.push_back(d.id);
  return out;
}

TEST(Ranking, SpecificityFirst) {
  std::vector<Diagnosis> all = {make("timeout", 55, 0), make("oom", 90, 2), make("summary", 35, 2)};
  rank_diagnoses(all);
  EXPECT_EQ(ids(all), (std::vector<std::string>{"oom", "timeout", "summary"}));
}

TEST(Ranking, EarliestFailureFirstAtEqualSpecificity) {
  std::vector<Diagnosis> all = {make("late", 90, 0, 200.0), make("early", 90, 3, 100.0),
                                make("untimed", 90, 1, 0.0)};
  rank_diagnoses(all);
  EXPECT_EQ(ids(all), (std::vector<std::string>{"early", "late", "untimed"}));
}

TEST(Ranking, TorchrunRootCauseRankBreaksTies) {
  std::vector<Diagnosis> all = {make("on_rank0", 60, 0), make("on_rank3", 60, 3),
                                make("torchrun_root_cause", 35, 3)};
  rank_diagnoses(all);
  EXPECT_EQ(ids(all), (std::vector<std::string>{"on_rank3", "on_rank0", "torchrun_root_cause"}));
}

// torchrun's summary of a failed rank is context for that rank's own error: the program's
// AttributeError at its end (the catalog's least specific fallback) is the headline, the
// summary follows it. A summary of a rank that left no error of its own keeps its place.
TEST(Ranking, ALaunchersSummaryFollowsTheRanksOwnError) {
  auto child = [](std::string id, int specificity, int rank) {
    Diagnosis d = make(std::move(id), specificity, rank);
    d.klass = std::string(kChildFailedClass);
    return d;
  };
  std::vector<Diagnosis> all = {child("torchrun_root_cause", 35, 1),
                                child("torchrun_worker_failed", 30, 1),
                                make("python_exception", 5, 1), make("peer_closed", 3, 0)};
  rank_diagnoses(all);
  EXPECT_EQ(ids(all), (std::vector<std::string>{"python_exception", "torchrun_root_cause",
                                                "torchrun_worker_failed", "peer_closed"}));

  std::vector<Diagnosis> other_rank = {child("torchrun_root_cause", 35, 1),
                                       make("python_exception", 5, 0)};
  rank_diagnoses(other_rank);
  EXPECT_EQ(ids(other_rank), (std::vector<std::string>{"torchrun_root_cause", "python_exception"}));
}

// A peer that closed its connection is a consequence of another rank's exit: it comes last
// whatever its specificity, and is not the rank's own error a launcher's summary yields to.
TEST(Ranking, APeerThatClosedItsConnectionComesLast) {
  Diagnosis peer = make("peer_closed_connection", 60, 0);
  peer.klass = std::string(kPeerExitedClass);
  Diagnosis summary = make("torchrun_root_cause", 35, 0);
  summary.klass = std::string(kChildFailedClass);
  std::vector<Diagnosis> all = {peer, summary, make("python_exception", 5, 2)};
  rank_diagnoses(all);
  EXPECT_EQ(ids(all), (std::vector<std::string>{"torchrun_root_cause", "python_exception",
                                                "peer_closed_connection"}));
}

TEST(Ranking, DeterministicByConfidenceThenRankThenId) {
  std::vector<Diagnosis> all = {make("b", 50, -1), make("a", 50, 1), make("c", 50, 0, 0, 0.9)};
  rank_diagnoses(all);
  EXPECT_EQ(ids(all), (std::vector<std::string>{"c", "a", "b"}));
}

}  // namespace
}  // namespace bigmac::diagnose
