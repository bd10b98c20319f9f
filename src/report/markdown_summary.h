#pragma once

#include <string>

#include "report/report_input.h"

namespace bigmac::report {

/// summary.md: a headline (passed, or failed at which gate), a table of gates with status,
/// duration, checks and loss against the baseline, then for each failed gate its failed checks
/// and the diagnosis (symptom, cause, fix, go back to) with evidence. Fits a CI job page
/// ($GITHUB_STEP_SUMMARY) and a pull-request comment; every cell is escaped.
std::string render_markdown(const ReportInput& input);

}  // namespace bigmac::report
