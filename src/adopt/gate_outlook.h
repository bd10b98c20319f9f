#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "gates/gate_catalog.h"
#include "gates/gate_evidence.h"
#include "gates/gate_verdict.h"

namespace bigmac::adopt {

/// What one gate will be able to check of this trainer, judged from the trial's logs.
struct GateOutlook {
  std::string gate_id;
  std::string title;
  std::vector<std::string> can_make;  ///< checks the trainer's logs can answer, in spec order
  /// Checks the logs cannot answer, one finding per field the trainer does not log, with the
  /// one sentence of what to add (gates/observability.h).
  std::vector<gates::UnobservableFinding> missing;
  std::string plan_error;  ///< the configuration cannot plan this gate (then nothing else is set)
  std::string not_applicable;  ///< why the gate does not apply (then nothing else is set)

  /// No check the gate requires is left unobservable (and the gate applies).
  bool can_pass() const;
};

/// Runs every gate's checks over the trial's evidence (one process) under that gate's plan from
/// `config`, with the trial itself as the baseline so that the comparisons are made too, and
/// keeps what each gate could observe. A check that failed on the trial still counts as one the
/// gate can make: the trial ran other settings (fewer steps, one process).
std::vector<GateOutlook> gate_outlook(const gates::GateCatalog& catalog,
                                      const config::Config& config,
                                      const gates::GateEvidence& evidence);

/// Terminal text: per gate "can pass" or "cannot pass", the checks it can make, and what to
/// log for each one it cannot.
std::string format_outlook(const std::vector<GateOutlook>& outlook);

}  // namespace bigmac::adopt
