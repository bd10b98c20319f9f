#pragma once

#include <string>

#include "report/report_input.h"

namespace bigmac::report {

/// summary.md: a headline (passed, or failed at which gate); for a run that did not pass the
/// verdict card (symptom, cause, fix, go back to, resume command, evidence) and the failing
/// metric as a table of the steps around its first divergence; then a table of gates with
/// status, duration, checks and loss against the baseline, and each gate's checks in a
/// <details> block (open for the failed gate). Fits a CI job page ($GITHUB_STEP_SUMMARY) and a
/// pull-request comment; every cell is escaped.
std::string render_markdown(const ReportInput& input);

}  // namespace bigmac::report
