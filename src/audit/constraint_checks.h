#pragma once

#include <string>
#include <vector>

#include "audit/finding.h"
#include "audit/project_facts.h"
#include "audit/run_graph.h"

namespace bigmac::audit {

/// The hard constraints of docs/architecture.md §2, checked per run with the values that take
/// effect, wherever every input is written literally: world size divisible by pp × tp,
/// written dp = world / (pp × tp), micro × accum × dp = global batch, num_layers ≥ pp, and
/// pp − 1 split points, strictly increasing, inside (0, num_layers). Constraints that could
/// not be checked are added to `unchecked`, saying which input is missing.
std::vector<Finding> check_constraints(const ProjectFacts& facts, const std::vector<RunGroup>& runs,
                                       std::vector<std::string>& unchecked);

}  // namespace bigmac::audit
