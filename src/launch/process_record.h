#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <vector>

#include "core/error.h"
#include "proc/process_table.h"

namespace bigmac::launch {

/// The process group and pids of a launch, kept in the run directory so that a later run of the
/// same directory can find what an earlier one left running. PR_SET_PDEATHSIG covers the ranks
/// themselves, not their children: a grandchild of a killed orchestrator survives in the group.
struct ProcessRecord {
  pid_t pgid = 0;
  std::vector<pid_t> pids;
};

/// The file name used inside a run directory.
inline constexpr const char* kProcessRecordName = "launch-processes.json";

Expected<void> write_process_record(const std::filesystem::path& path, const ProcessRecord& record);

/// nullopt when the file does not exist; an error when it exists but cannot be read.
Expected<std::optional<ProcessRecord>> read_process_record(const std::filesystem::path& path);

/// Live (non-zombie) processes still in the recorded group.
std::vector<proc::ProcessInfo> leftover_processes(const ProcessRecord& record);

}  // namespace bigmac::launch
