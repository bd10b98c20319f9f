#pragma once

#include <string>

#include "report/report_input.h"

namespace bigmac::report {

/// report.html: one self-contained page (inline CSS and SVG, no script, no font, no network;
/// a Content-Security-Policy forbids loading anything). Failure first: a run that did not pass
/// opens with the verdict card, then the failing metric against the baseline (metric_chart),
/// then the failed gate expanded. Then the gate timeline, a table of gates, and every other
/// gate collapsed in a <details>: every check with its evidence, checks not run, the
/// diagnoses, line charts of loss, grad_norm and lr per step against the baseline, and for
/// pipelined gates the per-stage micro-batch schedule. Every text from logs or state is escaped.
std::string render_html(const ReportInput& input);

}  // namespace bigmac::report
