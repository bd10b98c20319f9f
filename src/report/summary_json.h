#pragma once

#include <nlohmann/json.hpp>

#include "report/report_input.h"

namespace bigmac::report {

/// summary.json: the run's outcome for machines ("format": "bigmac-report-summary/1"): the
/// verdict card of a run that did not pass (null otherwise), every gate with status, duration
/// and attempt folder, every check with its message, evidence and (for a failed baseline
/// comparison) its divergence, checks not run, diagnoses, how the ranks ended, and the loss
/// against the baseline.
nlohmann::json summary_json(const ReportInput& input);

}  // namespace bigmac::report
