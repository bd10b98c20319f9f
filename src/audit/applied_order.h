#pragma once

#include <vector>

#include "audit/project_facts.h"
#include "audit/run_graph.h"

namespace bigmac::audit {

/// The literal writes of `setting` within `run`, in the order they apply: by source (default
/// in code, config file, #SBATCH, environment, launch script, code after loading), then by
/// file and line. The last one is the value the run uses.
std::vector<const Place*> writes_in_order(const ProjectFacts& facts, const RunGroup& run,
                                          Setting setting);

/// The write that takes effect in `run`, or nullptr when the setting is not written there.
const Place* effective_write(const ProjectFacts& facts, const RunGroup& run, Setting setting);

}  // namespace bigmac::audit
