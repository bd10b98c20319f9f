#include "launch/slurm_step.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <csignal>

#include "launch/slurm_hostlist.h"
#include "proc/command_output.h"

namespace bigmac::launch {
namespace {

bool placed_on(const RankPlacement& p, const std::string& node) { return p.node == node; }

/// The lowest rank known to run on `node`; -1 when none is.
int first_rank_on(const std::string& node, const std::map<int, RankPlacement>& placements) {
  for (const auto& [rank, p] : placements) {
    if (placed_on(p, node)) return rank;
  }
  return -1;
}

/// The task exit srun reported last for `task`, if any.
const SrunTaskExit* exit_of_task(const SrunReport& report, int task) {
  const SrunTaskExit* found = nullptr;
  for (const SrunTaskExit& e : report.task_exits()) {
    if (std::find(e.tasks.begin(), e.tasks.end(), task) != e.tasks.end()) found = &e;
  }
  return found;
}

int task_of_rank(int rank, const LaunchPlan& plan, const std::map<int, RankPlacement>& placements) {
  if (plan.launcher == LauncherKind::kSlurm) return rank;
  auto it = placements.find(rank);
  if (it != placements.end() && it->second.node_rank >= 0) return it->second.node_rank;
  return rank / std::max(1, plan.nproc_per_node);
}

}  // namespace

std::vector<int> ranks_of_task(int task, const LaunchPlan& plan,
                               const std::map<int, RankPlacement>& placements) {
  if (plan.launcher != LauncherKind::kSlurmTorchrun) return {task};
  std::vector<int> ranks;
  for (const auto& [rank, p] : placements) {
    if (p.node_rank == task) ranks.push_back(rank);
  }
  if (ranks.empty()) {
    for (int local = 0; local < plan.nproc_per_node; ++local) {
      ranks.push_back(task * plan.nproc_per_node + local);
    }
  }
  return ranks;
}

void attribute_srun_failure(const SrunReport& report, const LaunchPlan& plan,
                            const std::map<int, RankPlacement>& placements,
                            const std::map<int, ErrorLine>& errors, ProcessFailure& failure) {
  if (!report.failed_nodes().empty()) {
    const std::string& node = report.failed_nodes().front();
    const int rank = first_rank_on(node, placements);
    if (rank >= 0) failure.rank = rank;
    failure.node = node;
    failure.first_error_line =
        fmt::format("node {} failed (went down or was drained and killed) while the gate ran: {}",
                    node, report.node_failure_lines().front());
    return;
  }
  const SrunTaskExit* first = report.first_failure();
  if (first == nullptr) return;
  const std::vector<int> ranks = ranks_of_task(first->tasks.front(), plan, placements);
  failure.rank = ranks.front();
  failure.status = first->status;
  failure.node = first_host(first->hosts);
  auto placed = placements.find(failure.rank);
  if (placed != placements.end() && !placed->second.node.empty()) {
    failure.node = placed->second.node;
  }
  auto own = errors.find(failure.rank);
  failure.first_error_line =
      own != errors.end() && !own->second.best().empty() ? own->second.best() : first->line;
}

void apply_srun_report(const SrunReport& report, const LaunchPlan& plan,
                       const std::map<int, RankPlacement>& placements,
                       const std::optional<ProcessFailure>& root, RankOutcome& outcome) {
  const int task = task_of_rank(outcome.rank, plan, placements);
  const SrunTaskExit* exit = exit_of_task(report, task);
  auto placed = placements.find(outcome.rank);
  if (placed != placements.end() && !placed->second.node.empty()) {
    outcome.node = placed->second.node;
  } else if (exit != nullptr) {
    outcome.node = first_host(exit->hosts);
  }
  const auto& failed = report.failed_nodes();
  outcome.node_failed = !outcome.node.empty() &&
                        std::find(failed.begin(), failed.end(), outcome.node) != failed.end();
  if (exit == nullptr) {
    // srun words only the tasks it did not kill itself: a silent task in a failed step was
    // stopped with the step.
    if ((root && root->rank != outcome.rank) || !failed.empty()) outcome.stopped_by_us = true;
    return;
  }
  if (plan.launcher == LauncherKind::kSlurm) outcome.exit = exit->status;
  // srun ends the other tasks with SIGTERM/SIGKILL once one failed (--kill-on-bad-exit), and
  // every task when a node fails: those exits are consequences of the root cause.
  const bool killed = exit->status.signal == SIGTERM || exit->status.signal == SIGKILL;
  const bool is_root = root && root->rank == outcome.rank && failed.empty();
  if (killed && !is_root && (root || !failed.empty())) outcome.stopped_by_us = true;
}

std::string cancel_slurm_job(const LaunchPlan& plan,
                             const std::map<int, RankPlacement>& placements) {
  std::vector<std::string> argv = {plan.slurm.scancel, "--quiet"};
  if (!plan.slurm.inside_allocation) {
    argv.push_back("--name=" + plan.slurm.job_name);
  } else {
    std::string step;
    for (const auto& [rank, p] : placements) {
      if (!p.job_step.empty()) step = p.job_step;
    }
    if (step.find('.') == std::string::npos) return {};  // no task reached a node
    argv.push_back(step);
  }
  auto done = proc::run_command(argv, std::chrono::seconds(30));
  const std::string what = fmt::format("`{}`", fmt::join(argv, " "));
  if (!done) return fmt::format("{} could not run: {}", what, done.error().format());
  if (done->timed_out) return what + " did not answer in 30 s; check `squeue` for the job";
  // scancel --quiet exits 0 also for a job that is already gone.
  if (!done->ok()) {
    return fmt::format("{} failed ({}): {}; check `squeue` for the job", what,
                       done->status.describe(), done->first_line());
  }
  return {};
}

}  // namespace bigmac::launch
