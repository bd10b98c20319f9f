#pragma once

#include <string>
#include <vector>

#include "audit/finding.h"
#include "audit/project_facts.h"
#include "audit/run_graph.h"

namespace bigmac::audit {

/// Blocks held in a dict or set instead of an ordered container; blocks without a stable
/// layer id; an embedding or output head of a layered model built with no stage condition.
std::vector<Finding> check_model(const ProjectFacts& facts);

/// A run whose training entry (a program a launch script starts, or a file that initialises
/// the process group) prints no effective configuration: nothing prints a configuration
/// object, or at least three parallel settings in one call. Runs without an entry are added
/// to `unchecked`.
std::vector<Finding> check_config_print(const ProjectFacts& facts,
                                        const std::vector<RunGroup>& runs,
                                        std::vector<std::string>& unchecked);

}  // namespace bigmac::audit
