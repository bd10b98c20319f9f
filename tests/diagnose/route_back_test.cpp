#include "diagnose/route_back.h"

#include <gtest/gtest.h>

#include <iterator>

#include "builtin_diagnoser.h"
#include "gates/gate_spec.h"

namespace bigmac::diagnose {
namespace {

// The gate catalog's ids in order, from the gate files: the only list of gates.
const std::vector<std::string>& gate_ids() {
  static const std::vector<std::string> ids = [] {
    std::vector<std::string> out;
    auto specs = gates::load_gate_specs(std::string(BIGMAC_SOURCE_DIR) + "/stages");
    EXPECT_TRUE(specs.has_value());
    if (specs) {
      for (const gates::GateSpec& s : *specs) out.push_back(s.id);
    }
    return out;
  }();
  return ids;
}

std::string route_back_at(std::string_view proposed, std::string_view failed) {
  return diagnose::route_back_at(proposed, failed, gate_ids());
}
int gate_order(std::string_view gate) { return diagnose::gate_order(gate, gate_ids()); }
void route_back_within(std::vector<Diagnosis>& d, std::string_view failed) {
  diagnose::route_back_within(d, failed, gate_ids());
}

TEST(RouteBack, ALaterGateBecomesTheFailedGate) {
  EXPECT_EQ(route_back_at("shapes", "single"), "single");
  EXPECT_EQ(route_back_at("single", "shapes"), "single");
  EXPECT_EQ(route_back_at("dp", "dp"), "dp");
  EXPECT_EQ(route_back_at("", "pp2"), "pp2");
  EXPECT_EQ(route_back_at("nowhere", "pp2"), "pp2");
}

// Every diagnosis the built-in catalog can produce, at every gate it can fail at: its route
// back is that gate or an earlier one, and stays the catalog's where the catalog's is allowed.
TEST(RouteBack, EveryDiagnosisOfTheCatalogAtEveryGateRoutesToItOrEarlier) {
  const Catalog& catalog = test_support::builtin_diagnoser().catalog();
  std::vector<const EntryText*> entries;
  for (const Signature& s : catalog.signatures) entries.push_back(&s.text);
  for (const RuleText& r : catalog.rules) entries.push_back(&r.text);
  ASSERT_GT(entries.size(), 100u);
  ASSERT_EQ(gate_ids().size(), 5u);
  for (std::size_t g = 0; g < gate_ids().size(); ++g) {
    const std::string failed = gate_ids()[g];
    std::vector<Diagnosis> diagnoses;
    for (const EntryText* e : entries) {
      Diagnosis d;
      d.id = e->id;
      d.gate = e->gate;
      d.fix = e->fix;
      diagnoses.push_back(d);
    }
    route_back_within(diagnoses, failed);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const Diagnosis& d = diagnoses[i];
      const int own = gate_order(entries[i]->gate);
      ASSERT_GE(own, 0) << d.id << " names an unknown gate " << entries[i]->gate;
      EXPECT_LE(gate_order(d.gate), static_cast<int>(g)) << d.id << " at " << failed;
      if (own <= static_cast<int>(g)) {
        EXPECT_EQ(d.gate, entries[i]->gate) << d.id << " at " << failed;
        EXPECT_EQ(d.fix, entries[i]->fix);
      } else {
        EXPECT_EQ(d.gate, failed) << d.id;
        EXPECT_NE(d.fix.find("comes after it"), std::string::npos) << d.id;
      }
    }
  }
}

// The case of issue 21: a stored-baseline mismatch at single is worded as a regression and
// routes back to single, not to `shapes`.
TEST(RouteBack, LossWrongFromTheFirstStepAtSingleStaysAtSingle) {
  const Catalog& catalog = test_support::builtin_diagnoser().catalog();
  const RuleText* rule = catalog.rule("loss_wrong_from_first_step");
  ASSERT_NE(rule, nullptr);
  EXPECT_EQ(rule->text.gate, "shapes");
  std::vector<Diagnosis> d(1);
  d[0].gate = rule->text.gate;
  route_back_within(d, "single");
  EXPECT_EQ(d[0].gate, "single");
  ASSERT_NE(catalog.rule("baseline_regression"), nullptr);
  EXPECT_EQ(catalog.rule("baseline_regression")->text.gate, "single");
}

}  // namespace
}  // namespace bigmac::diagnose
