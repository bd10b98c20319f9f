#pragma once

#include <string>

#include "report/report_input.h"

namespace bigmac::report {

/// junit.xml as CI systems read it (Jenkins/GitLab/GitHub test reporters): <testsuites> with
/// one <testsuite> per gate and one <testcase> per check. A failed check is a <failure> whose
/// text carries the check's evidence and the gate's diagnosis; a check not run, or a gate
/// outside the selection or never reached, is <skipped>; a gate that launched but left no
/// verdict (killed mid-gate) is one <error> test case. Every text is XML-escaped.
std::string render_junit(const ReportInput& input);

}  // namespace bigmac::report
