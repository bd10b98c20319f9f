// Every failed check of a gate explained by a diagnosis, or named as having no known cause
// (issue 17).

#include "diagnose/check_explanation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "diagnose/catalog.h"

namespace bigmac::diagnose {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Diagnosis of_class(std::string id, std::string klass) {
  Diagnosis d;
  d.id = std::move(id);
  d.klass = std::move(klass);
  return d;
}

TEST(CheckExplanation, ARecordClassExplainsOnlyItsOwnChecks) {
  EXPECT_TRUE(explains("lr_scaling", "lr_vs_baseline"));
  EXPECT_TRUE(explains("lr_scaling", "loss_vs_baseline"));
  EXPECT_FALSE(explains("lr_scaling", "exit_status"));
  EXPECT_FALSE(explains("checkpoint_writers", "loss_vs_baseline"));
  EXPECT_TRUE(explains("checkpoint_writers", "single_checkpoint_writer"));
}

TEST(CheckExplanation, ARankThatEndedExplainsWhatItDidNotWrite) {
  for (const char* klass : {"child_failed", "rank_stall", "shape_mismatch", "out_of_memory"}) {
    EXPECT_TRUE(explains(klass, "exit_status")) << klass;
    EXPECT_TRUE(explains(klass, "fields_present")) << klass;
    EXPECT_TRUE(explains(klass, "step_sequence")) << klass;
  }
  // … but not a check that judges what was written.
  EXPECT_FALSE(explains("child_failed", "single_checkpoint_writer"));
  EXPECT_FALSE(explains("rank_stall", "finite_loss"));
  // … unless that check had nothing to judge: no step was ever logged.
  EXPECT_TRUE(explains("rendezvous_timeout", "finite_loss", true));
  EXPECT_FALSE(explains("checkpoint_writers", "finite_loss", true));  // a record class: no
}

TEST(CheckExplanation, EachFailedCheckGetsItsDiagnosesOrANoKnownCause) {
  std::vector<Diagnosis> diagnoses = {of_class("lr_scaled_with_world_size", "lr_scaling")};
  const std::vector<FailedCheck> failed = {
      {"lr_vs_baseline", "lr diverges at step 0", false},
      {"single_checkpoint_writer", "ranks 0 and 1 wrote model.pt", false}};
  explain_failed_checks(diagnoses, failed, "dp");
  ASSERT_EQ(diagnoses.size(), 2u);
  EXPECT_THAT(diagnoses[0].explains, ElementsAre("lr_vs_baseline"));
  const Diagnosis& unknown = diagnoses[1];
  EXPECT_EQ(unknown.id, "no_known_cause");
  EXPECT_EQ(unknown.gate, "dp");
  EXPECT_THAT(unknown.explains, ElementsAre("single_checkpoint_writer"));
  EXPECT_THAT(unknown.symptom, HasSubstr("ranks 0 and 1 wrote model.pt"));
  EXPECT_THAT(to_json(unknown).dump(), HasSubstr("\"explains\":[\"single_checkpoint_writer\"]"));
}

TEST(CheckExplanation, EveryClassOfTheCatalogExplainsSomeCheck) {
  auto catalog = builtin_catalog();
  ASSERT_TRUE(catalog) << catalog.error().format();
  const char* checks[] = {"finite_loss",
                          "grad_norm_nonzero",
                          "grad_norm_stable",
                          "step_sequence",
                          "samples_per_step",
                          "fields_present",
                          "exit_status",
                          "process_group_formed",
                          "loss_vs_baseline",
                          "grad_norm_vs_baseline",
                          "lr_vs_baseline",
                          "param_count",
                          "param_digest",
                          "layer_coverage",
                          "schedule_order",
                          "no_starved_stage",
                          "shape_chain",
                          "fixed_seq_length",
                          "labels_last_stage_only",
                          "no_middle_stage_loss",
                          "single_checkpoint_writer",
                          "no_idle_stage",
                          "fresh_start",
                          "replicas_in_sync",
                          "no_duplicate_samples",
                          "sample_coverage"};
  std::vector<std::string> classes;
  for (const Signature& s : catalog->signatures) classes.push_back(s.text.klass);
  for (const RuleText& r : catalog->rules) classes.push_back(r.text.klass);
  for (const std::string& klass : classes) {
    bool any = false;
    for (const char* check : checks) any = any || explains(klass, check);
    EXPECT_TRUE(any) << klass << " explains no check: a gate could never be explained by it";
  }
}

}  // namespace
}  // namespace bigmac::diagnose
