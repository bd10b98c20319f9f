#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "proc/rank_process.h"

namespace bigmac::launch {

/// srun's word on some of its tasks: "srun: error: n1: task 0: Exited with exit code 2",
/// "srun: error: n2: tasks 2-3: Killed" (Slurm's launch plugin, _task_finish).
struct SrunTaskExit {
  std::string hosts;        ///< the node(s) the tasks ran on, as srun wrote them
  std::vector<int> tasks;   ///< task ids = ranks under `--ntasks`
  proc::ExitStatus status;  ///< the exit code, or the signal srun named
  bool out_of_memory = false;
  std::string line;  ///< the line as srun printed it
};

/// What srun and slurmstepd said about the job step on their own behalf (not the tasks'
/// output), read line by line: task exits and node failures.
class SrunReport {
 public:
  /// Takes one stderr line (launcher labels already stripped); true when it was one of srun's
  /// or slurmstepd's own lines, which are then not a rank's error text.
  bool add(std::string_view line);

  /// Task exits in the order srun reported them.
  const std::vector<SrunTaskExit>& task_exits() const { return exits_; }
  /// Nodes Slurm reported failed ("srun: error: Node failure on n2"), in order, once each.
  const std::vector<std::string>& failed_nodes() const { return failed_nodes_; }
  /// The lines that reported the node failures (srun's and slurmstepd's).
  const std::vector<std::string>& node_failure_lines() const { return failure_lines_; }

  /// The task exit that is the root cause: the first non-zero exit code or signal other
  /// than the SIGTERM/SIGKILL srun sends the other tasks after a failure; else the first exit.
  /// nullptr when srun reported none.
  const SrunTaskExit* first_failure() const;

 private:
  std::vector<SrunTaskExit> exits_;
  std::vector<std::string> failed_nodes_;
  std::vector<std::string> failure_lines_;
};

/// The signal number whose strsignal() text is `name` ("Killed" -> SIGKILL); 0 when unknown.
int signal_from_description(std::string_view name);

}  // namespace bigmac::launch
