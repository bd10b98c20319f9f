#pragma once

#include <vector>

#include "audit/finding.h"
#include "audit/project_facts.h"
#include "audit/run_graph.h"

namespace bigmac::audit {

/// A setting written in a layer other than the one that consumes it (micro-batch size in the
/// launch script, a device count in the model config, split points in the launcher).
std::vector<Finding> check_layers(const ProjectFacts& facts, const std::vector<RunGroup>& runs);

/// dp or the global batch written with a value instead of derived.
std::vector<Finding> check_derived(const ProjectFacts& facts);

/// A setting written in several places of one run with different values, or a default that a
/// later load overrides, with the order in which they apply.
std::vector<Finding> check_conflicts(const ProjectFacts& facts, const std::vector<RunGroup>& runs);

}  // namespace bigmac::audit
