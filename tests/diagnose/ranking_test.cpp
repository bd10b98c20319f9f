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

TEST(Ranking, DeterministicByConfidenceThenRankThenId) {
  std::vector<Diagnosis> all = {make("b", 50, -1), make("a", 50, 1), make("c", 50, 0, 0, 0.9)};
  rank_diagnoses(all);
  EXPECT_EQ(ids(all), (std::vector<std::string>{"c", "a", "b"}));
}

}  // namespace
}  // namespace bigmac::diagnose
