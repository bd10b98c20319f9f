#include "diagnose/check_explanation.h"

#include <fmt/format.h>

#include <algorithm>

namespace bigmac::diagnose {
bool explains(const Catalog& catalog, std::string_view klass, std::string_view check,
              bool nothing_judged) {
  if (klass == "unexplained") return false;
  const ClassSpec* spec = catalog.class_spec(klass);
  const auto lists = [&](const std::vector<std::string>& checks) {
    return std::find(checks.begin(), checks.end(), check) != checks.end();
  };
  if ((spec == nullptr || spec->ends_a_rank) &&
      (nothing_judged || lists(catalog.ending_explains))) {
    return true;
  }
  return spec != nullptr && lists(spec->explains);
}

void explain_failed_checks(const Catalog& catalog, std::vector<Diagnosis>& diagnoses,
                           std::span<const FailedCheck> failed, const std::string& gate) {
  for (Diagnosis& d : diagnoses) {
    d.explains.clear();
    for (const FailedCheck& check : failed) {
      if (explains(catalog, d.klass, check.name, check.nothing_judged))
        d.explains.push_back(check.name);
    }
  }
  for (const FailedCheck& check : failed) {
    const bool explained = std::any_of(diagnoses.begin(), diagnoses.end(), [&](const Diagnosis& d) {
      return std::find(d.explains.begin(), d.explains.end(), check.name) != d.explains.end();
    });
    if (explained) continue;
    Diagnosis d;
    d.id = "no_known_cause";
    d.klass = "unexplained";
    d.symptom = fmt::format("check {} failed: {}", check.name, check.message);
    d.cause = fmt::format("no rule of the catalog explains why {} failed here", check.name);
    d.fix = fmt::format(
        "read the evidence of {} in verdict.json and the ranks' logs; `bigmac-bringup diagnose` "
        "on those logs may name more",
        check.name);
    d.gate = gate;
    d.confidence = 0;
    d.specificity = 0;
    d.explains = {check.name};
    diagnoses.push_back(std::move(d));
  }
}

}  // namespace bigmac::diagnose
