#pragma once

#include <nlohmann/json.hpp>

#include "report/report_input.h"

namespace bigmac::report {

/// summary.json: the run's outcome for machines ("format": "bigmac-report-summary/1"): every
/// gate with status, duration and attempt folder, every check with its message and evidence,
/// checks not run, diagnoses, how the ranks ended, and the loss against the baseline.
nlohmann::json summary_json(const ReportInput& input);

}  // namespace bigmac::report
