#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace bigmac::launch {

/// The first host of a Slurm hostlist expression, as SLURM_JOB_NODELIST and srun's messages
/// write it: "n[1-2]" -> "n1", "gpu[07-08,12],cpu3" -> "gpu07", "a[1-2]b[3-4]" -> "a1b3".
/// Empty for an empty list.
std::string first_host(std::string_view hostlist);

/// Every host of a hostlist expression, in order ("n[1-3],m" -> n1 n2 n3 m). Zero padding of a
/// range is kept ("gpu[07-08]" -> gpu07 gpu08). The error names the malformed part.
Expected<std::vector<std::string>> expand_hostlist(std::string_view hostlist);

/// Slurm's per-node counts ("2(x3),1" in SLURM_STEP_TASKS_PER_NODE or SLURM_JOB_CPUS_PER_NODE)
/// expanded to one number per node: {2, 2, 2, 1}.
Expected<std::vector<int>> expand_node_counts(std::string_view text);

/// Slurm's task list in srun messages ("0-1,3") expanded: {0, 1, 3}.
Expected<std::vector<int>> expand_task_list(std::string_view text);

}  // namespace bigmac::launch
