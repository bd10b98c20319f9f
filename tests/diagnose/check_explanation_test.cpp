// Every failed check of a gate explained by a diagnosis, or named as having no known cause
// (issue 17).

#include "diagnose/check_explanation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "config/data_file.h"
#include "diagnose/catalog.h"
#include "gates/check_registry.h"

namespace bigmac::diagnose {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const Catalog& builtin() {
  static const Catalog catalog = [] {
    auto c = builtin_catalog();
    EXPECT_TRUE(c) << c.error().format();
    return c ? std::move(*c) : Catalog{};
  }();
  return catalog;
}

bool explains(std::string_view klass, std::string_view check, bool nothing_judged = false) {
  return diagnose::explains(builtin(), klass, check, nothing_judged);
}

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
  explain_failed_checks(builtin(), diagnoses, failed, "dp");
  ASSERT_EQ(diagnoses.size(), 2u);
  EXPECT_THAT(diagnoses[0].explains, ElementsAre("lr_vs_baseline"));
  const Diagnosis& unknown = diagnoses[1];
  EXPECT_EQ(unknown.id, "no_known_cause");
  EXPECT_EQ(unknown.gate, "dp");
  EXPECT_THAT(unknown.explains, ElementsAre("single_checkpoint_writer"));
  EXPECT_THAT(unknown.symptom, HasSubstr("ranks 0 and 1 wrote model.pt"));
  EXPECT_THAT(to_json(unknown).dump(), HasSubstr("\"explains\":[\"single_checkpoint_writer\"]"));
}

// The check names come from the gates' registry, so a check added there and forgotten here, or a
// name misspelt in the catalog, fails this test rather than leaving a failure unexplained.
TEST(CheckExplanation, EveryClassOfTheCatalogExplainsSomeCheck) {
  const Catalog& catalog = builtin();
  std::vector<std::string> classes;
  for (const Signature& s : catalog.signatures) classes.push_back(s.text.klass);
  for (const RuleText& r : catalog.rules) classes.push_back(r.text.klass);
  for (const std::string& klass : classes) {
    bool any = false;
    for (const gates::RegisteredCheck& check : gates::registered_checks()) {
      any = any || explains(klass, check.name);
    }
    EXPECT_TRUE(any) << klass << " explains no check: a gate could never be explained by it";
  }
}

TEST(CheckExplanation, TheCatalogNamesOnlyRegisteredChecksAndExplainsEachOfThem) {
  const Catalog& catalog = builtin();
  const auto registered = [](const std::string& name) {
    return gates::find_check(name) != nullptr;
  };
  for (const std::string& check : catalog.ending_explains) {
    EXPECT_TRUE(registered(check)) << "[ending] names `" << check << "`, no registered check";
  }
  for (const ClassSpec& c : catalog.classes) {
    for (const std::string& check : c.explains) {
      EXPECT_TRUE(registered(check)) << "class " << c.id << " (line " << c.line << ") names `"
                                     << check << "`, no registered check";
    }
  }
  std::vector<std::string> classes;
  for (const Signature& s : catalog.signatures) classes.push_back(s.text.klass);
  for (const RuleText& r : catalog.rules) classes.push_back(r.text.klass);
  // A check that only warns never fails a gate: nothing is left for a diagnosis to explain.
  const std::string_view warns_only[] = {"buffers_in_sync"};  // stages/02-dp.toml says so
  for (const gates::RegisteredCheck& check : gates::registered_checks()) {
    if (std::find(std::begin(warns_only), std::end(warns_only), check.name) !=
        std::end(warns_only)) {
      continue;
    }
    const bool any = std::any_of(classes.begin(), classes.end(), [&](const std::string& klass) {
      return explains(klass, check.name);
    });
    EXPECT_TRUE(any) << "no class explains check " << check.name
                     << ": its failure would always be `no_known_cause`";
  }
}

TEST(CheckExplanation, ClassEntriesAreChecked) {
  const auto parse = [](std::string text) {
    auto file = config::parse_data_file(
        R"([[rule]]
id = "grad_norm_zero"
class = "no_gradient"
gate = "single"
symptom = "s"
cause = "c"
fix = "f"
)" + text,
        "catalog.toml");
    EXPECT_TRUE(file) << file.error().format();
    return parse_catalog(*file);
  };
  auto ok = parse(
      "[[class]]\nid = \"no_gradient\"\nkind = \"records\"\nexplains = [\"grad_norm_nonzero\"]\n");
  ASSERT_TRUE(ok) << ok.error().format();
  EXPECT_FALSE(diagnose::explains(*ok, "no_gradient", "exit_status"));
  EXPECT_TRUE(diagnose::explains(*ok, "no_gradient", "grad_norm_nonzero"));

  auto unknown = parse("[[class]]\nid = \"no_gradients\"\n");
  ASSERT_FALSE(unknown);
  EXPECT_THAT(unknown.error().format(), HasSubstr("class `no_gradients` is the class of no"));
  EXPECT_THAT(unknown.error().format(), HasSubstr("did you mean `no_gradient`?"));
  auto kind = parse("[[class]]\nid = \"no_gradient\"\nkind = \"record\"\n");
  ASSERT_FALSE(kind);
  EXPECT_THAT(kind.error().format(), HasSubstr("unknown kind `record`"));
  auto list = parse("[ending]\nexplains = \"exit_status\"\n");
  ASSERT_FALSE(list);
  EXPECT_THAT(list.error().format(), HasSubstr("`explains` must be a list of check names"));
  EXPECT_THAT(list.error().format(), HasSubstr("catalog.toml"));
}

}  // namespace
}  // namespace bigmac::diagnose
