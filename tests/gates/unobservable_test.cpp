// A check that needs a field the trainer does not log is unobservable: one finding per missing
// field, a failure only where the gate requires the check (or under --strict).

#include <gtest/gtest.h>

#include <algorithm>

#include "config/settings.h"
#include "gates/gate_verdict.h"
#include "gates/observability.h"
#include "gates/step_checks.h"
#include "record_builder.h"

namespace bigmac::gates {
namespace {

using namespace testing;

// One rank that logs what a print-only trainer logs: step and loss, nothing else, and exits 0.
GateEvidence loss_only(int steps, bool with_grad_norm = false) {
  std::vector<logs::Record> records;
  for (int i = 0; i < steps; ++i) {
    logs::StepRecord s;
    s.at = at(0, i + 1);
    s.global_step = i;
    s.loss = 4.0 - 0.1 * i;
    if (with_grad_norm && i > 0) s.grad_norm = 1.0;  // logged, but not on step 0
    records.emplace_back(s);
  }
  GateEvidence e;
  e.add_rank(0, records, clean_exit());
  return e;
}

const UnobservableFinding* finding(const GateVerdict& v, const std::string& field) {
  for (const UnobservableFinding& u : v.unobservable) {
    if (u.field == field) return &u;
  }
  return nullptr;
}

TEST(Unobservable, ALossOnlyTrainerPassesSingleWithOneWarningPerMissingField) {
  const GateVerdict v = evaluate_gate(spec("single"), plan("single", 3), loss_only(3), nullptr);
  EXPECT_TRUE(v.passed) << format_verdict(v);
  for (const CheckResult& r : v.results) EXPECT_TRUE(r.passed) << r.name << ": " << r.message;
  // grad_norm is needed by three checks: one finding names all three.
  const UnobservableFinding* g = finding(v, "grad_norm");
  ASSERT_NE(g, nullptr) << format_verdict(v);
  EXPECT_EQ(g->checks,
            (std::vector<std::string>{"fields_present", "grad_norm_nonzero", "grad_norm_stable"}));
  EXPECT_TRUE(g->required.empty());
  EXPECT_NE(g->what_to_log.find("\"grad_norm\""), std::string::npos) << g->what_to_log;
  EXPECT_NE(g->what_to_log.find("probe = true"), std::string::npos) << g->what_to_log;
  // Every finding names a distinct field.
  std::vector<std::string> fields;
  for (const UnobservableFinding& u : v.unobservable) fields.push_back(u.field);
  std::sort(fields.begin(), fields.end());
  EXPECT_EQ(std::adjacent_find(fields.begin(), fields.end()), fields.end());
  EXPECT_NE(finding(v, "model"), nullptr);
  EXPECT_NE(finding(v, "samples_per_step"), nullptr);
  const std::string text = format_verdict(v);
  EXPECT_NE(text.find("warn fields_present, grad_norm_nonzero, grad_norm_stable"),
            std::string::npos)
      << text;
}

TEST(Unobservable, StrictMakesEveryUnobservableCheckAFailure) {
  GateSpec strict = spec("single");
  strict.strict = true;
  const GateVerdict v = evaluate_gate(strict, plan("single", 3), loss_only(3), nullptr);
  EXPECT_FALSE(v.passed);
  EXPECT_EQ(v.first_failure(), nullptr);  // nothing was judged wrong
  ASSERT_NE(v.first_required_unobservable(), nullptr);
  EXPECT_EQ(v.route_back, "single");
  EXPECT_NE(v.summary().find("unobservable: the trainer logs no"), std::string::npos)
      << v.summary();
}

TEST(Unobservable, ARequiredCheckThatCannotBeMadeFailsTheGate) {
  GateSpec s = spec("single");
  s.params["required_checks"] = {"exit_status", "grad_norm_nonzero"};
  const GateVerdict v = evaluate_gate(s, plan("single", 3), loss_only(3), nullptr);
  EXPECT_FALSE(v.passed);
  const UnobservableFinding* g = finding(v, "grad_norm");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->required, (std::vector<std::string>{"grad_norm_nonzero"}));
  // A required check no log answers fails its gate, and says so in words.
  EXPECT_NE(format_verdict(v).find("  FAIL fields_present, grad_norm_nonzero"), std::string::npos)
      << format_verdict(v);
  EXPECT_NE(format_verdict(v).find("unobservable (required: grad_norm_nonzero)"),
            std::string::npos);
}

TEST(Unobservable, NoLossAtAllLeavesTheRequiredFiniteLossUnobservable) {
  GateEvidence e;
  std::vector<logs::Record> records;
  for (int i = 0; i < 3; ++i) {
    logs::StepRecord s;
    s.at = at(0, i + 1);
    s.global_step = i;
    s.lr = 0.1;
    records.emplace_back(s);
  }
  e.add_rank(0, records, clean_exit());
  const GateVerdict v = evaluate_gate(spec("single"), plan("single", 3), e, nullptr);
  EXPECT_FALSE(v.passed);
  const UnobservableFinding* l = finding(v, "loss");
  ASSERT_NE(l, nullptr) << format_verdict(v);
  EXPECT_NE(std::find(l->required.begin(), l->required.end(), "finite_loss"), l->required.end());
}

TEST(Unobservable, AFieldLoggedOnSomeStepsIsAFailureNotUnobservable) {
  const CheckResult r = run_check(check_grad_norm_nonzero, loss_only(3, true), plan("single"));
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(r.unobservable.empty());
  EXPECT_NE(r.message.find("step 0"), std::string::npos) << r.message;
}

TEST(Unobservable, ARunThatNeverSteppedFailsInsteadOfBlamingTheLogs) {
  GateEvidence e;
  RankEnding crashed = clean_exit();
  crashed.exit_code = 1;
  e.add_rank(0, {}, crashed);
  const CheckResult r = run_check(check_samples_per_step, e, plan("single"));
  EXPECT_FALSE(r.passed);
  EXPECT_TRUE(r.unobservable.empty()) << r.message;
}

TEST(Unobservable, VerdictJsonRoundTripsAndOldFilesStillRead) {
  GateSpec s = spec("single");
  s.params["required_checks"] = {"grad_norm_stable"};
  const GateVerdict v = evaluate_gate(s, plan("single", 3), loss_only(3), nullptr);
  ASSERT_FALSE(v.unobservable.empty());
  const GateVerdict back = verdict_from_json(to_json(v));
  ASSERT_EQ(back.unobservable.size(), v.unobservable.size());
  for (std::size_t i = 0; i < v.unobservable.size(); ++i) {
    EXPECT_EQ(back.unobservable[i].field, v.unobservable[i].field);
    EXPECT_EQ(back.unobservable[i].what_to_log, v.unobservable[i].what_to_log);
    EXPECT_EQ(back.unobservable[i].checks, v.unobservable[i].checks);
    EXPECT_EQ(back.unobservable[i].required, v.unobservable[i].required);
  }
  EXPECT_EQ(back.passed, v.passed);
  nlohmann::json old = to_json(v);
  old.erase("unobservable");
  EXPECT_TRUE(verdict_from_json(old).unobservable.empty());
  old["unobservable"] = {{{"field", "lr"}, {"checks", {"lr_vs_baseline", 3}}}};
  const GateVerdict odd = verdict_from_json(old);
  ASSERT_EQ(odd.unobservable.size(), 1u);
  EXPECT_EQ(odd.unobservable[0].checks, (std::vector<std::string>{"lr_vs_baseline"}));
}

TEST(Unobservable, RequiredChecksMustNameChecksOfTheGate) {
  std::map<std::string, config::Setting> overrides;
  config::Setting bad;
  bad.key = "gates.single.required_checks";
  bad.value = std::vector<std::string>{"finite_los"};
  overrides["required_checks"] = bad;
  auto r = apply_overrides(spec("single"), overrides);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().front().message.find("not a check of this gate"), std::string::npos);
  EXPECT_NE(r.error().front().hint.find("finite_loss"), std::string::npos);
  config::Setting good = bad;
  good.value = std::vector<std::string>{"finite_loss"};
  overrides["required_checks"] = good;
  auto ok = apply_overrides(spec("single"), overrides);
  ASSERT_TRUE(ok);
  EXPECT_TRUE(is_required(*ok, "finite_loss"));
  EXPECT_FALSE(is_required(*ok, "exit_status"));
}

TEST(Unobservable, EveryFieldAChecksNamesHasItsOwnAdvice) {
  for (const char* field : {"loss", "grad_norm", "lr", "samples_per_step", "model", "param_digest",
                            "pg_ready", "layout", "mb", "shape", "stage_loss", "ckpt"}) {
    const MissingField m = missing_field(field);
    EXPECT_EQ(m.what_to_log.find("as a field of a bigmac-log event"), std::string::npos)
        << field << " falls back to the generic sentence";
  }
}

}  // namespace
}  // namespace bigmac::gates
