#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "report/report_input.h"

namespace bigmac::report {

/// What every report of a run that did not pass shows first: the failed gate's verdict in
/// the words a user acts on (symptom, evidence, cause, fix, where to go back, how to resume).
/// The HTML page, summary.md and the terminal's final block each draw it their way.
struct VerdictCard {
  bool failed = false;         ///< a gate failed (else the run stopped before a verdict)
  std::size_t gate_index = 0;  ///< into ReportInput::gates
  std::string gate;            ///< gate id
  std::string headline;        ///< "gate 3 pp2 failed: loss_vs_baseline"
  std::string check;           ///< the failed check; empty when the gate did not finish
  std::string check_message;
  std::string diagnosis;  ///< id of the most likely diagnosis; empty when none matched
  std::string symptom;
  std::vector<std::string> evidence;  ///< log lines, the diagnosis's first
  std::string cause;
  std::string fix;
  std::string go_back_to;                    ///< gate id
  std::string resume;                        ///< the command that continues this run
  std::string resume_note;                   ///< when to run it and what it reruns
  std::vector<std::string> other_diagnoses;  ///< "id: symptom" of the less likely ones
};

/// "regression against baselines/<name>.json at step k (metric)" when the gate failed as a
/// regression against its stored baseline (the `regression` class of diagnosis); else empty.
/// What a CI page leads with: the JUnit failure message, summary.md, the card's headline.
std::string regression_headline(const GateReport& gate);

/// The card of the first failed gate, or of a run stopped otherwise (could not launch a gate,
/// interrupted, killed mid-gate); empty for a run that passed or has not started.
std::optional<VerdictCard> verdict_card(const ReportInput& input);

}  // namespace bigmac::report
