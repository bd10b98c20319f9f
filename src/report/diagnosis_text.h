#pragma once

#include <string>

#include "diagnose/diagnosis.h"

namespace bigmac::report {

/// The four things a failure must say, one per line, then the evidence lines:
///   Symptom: ... / Cause: ... / Fix: ... / Go back to: <gate> / rank 1 rank1.log:14: <text>
/// The report's own plain form, so junit.xml and the terminal table stay stable when the
/// diagnose module's richer printer changes.
std::string diagnosis_text(const diagnose::Diagnosis& diagnosis);

/// "rank 1 rank1.log:14: text" (parts left out when unknown).
std::string evidence_line(const diagnose::Evidence& evidence);

}  // namespace bigmac::report
