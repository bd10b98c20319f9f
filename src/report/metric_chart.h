#pragma once

#include <string>

#include "report/failing_metric.h"

namespace bigmac::report {

/// The failing metric of a gate as two SVG panels on one step axis: the run against the
/// baseline with the band the tolerance allows, then their relative difference on a log scale
/// with the allowed relative difference; the first divergent step (or, without one, the last
/// step the run logged before the baseline's end) marked on both.
std::string metric_chart(const FailingMetric& metric, const std::string& gate_id);

}  // namespace bigmac::report
