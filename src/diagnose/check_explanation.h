#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/catalog.h"
#include "diagnose/diagnosis.h"

namespace bigmac::diagnose {

/// A gate check that failed, as the diagnosis of its gate receives it.
struct FailedCheck {
  std::string name;     ///< gates' check name (`loss_vs_baseline`)
  std::string message;  ///< what the check found
  /// The check had nothing to judge (no step records, no event it reads): it failed because
  /// the records it needs were never written, so what ended the ranks explains it.
  bool nothing_judged = false;
};

/// Whether a diagnosis of class `klass` explains a failed check named `check`: the cause it
/// names is one that makes that check fail, as the catalog's `[[class]]` entries say. A rank
/// that ended (crashed, hung, never joined) explains every check that needs the records it did
/// not write (`[ending]`), and any check that judged nothing.
bool explains(const Catalog& catalog, std::string_view klass, std::string_view check,
              bool nothing_judged = false);

/// Sets each diagnosis's `explains` to the failed checks it explains, and appends one
/// `no_known_cause` diagnosis per failed check that none explains, naming the check, what it
/// found and the gate (`gate`, the failing one) to stay at. Every failed check then has at
/// least one diagnosis that explains it.
void explain_failed_checks(const Catalog& catalog, std::vector<Diagnosis>& diagnoses,
                           std::span<const FailedCheck> failed, const std::string& gate);

}  // namespace bigmac::diagnose
