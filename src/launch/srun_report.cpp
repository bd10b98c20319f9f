#include "launch/srun_report.h"

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstring>

#include "core/trim.h"
#include "launch/slurm_hostlist.h"

namespace bigmac::launch {
namespace {

constexpr std::string_view kSrunError = "srun: error: ";

// "<hosts>: task<s> <list>: <what>" after "srun: error: " (launch_slurm.c _task_finish).
bool parse_task_exit(std::string_view rest, std::string_view line, SrunTaskExit& out) {
  const std::size_t hosts_end = rest.find(": task");
  if (hosts_end == std::string_view::npos || hosts_end == 0) return false;
  std::string_view after = rest.substr(hosts_end + 2);
  if (after.starts_with("tasks ")) {
    after.remove_prefix(6);
  } else if (after.starts_with("task ")) {
    after.remove_prefix(5);
  } else {
    return false;
  }
  const std::size_t list_end = after.find(": ");
  if (list_end == std::string_view::npos) return false;
  auto tasks = expand_task_list(after.substr(0, list_end));
  if (!tasks || tasks->empty()) return false;
  std::string_view what = trim(after.substr(list_end + 2));
  out.hosts = std::string(rest.substr(0, hosts_end));
  out.tasks = std::move(*tasks);
  out.line = std::string(line);
  constexpr std::string_view kExited = "Exited with exit code ";
  if (what.starts_with(kExited)) {
    const std::string_view code = what.substr(kExited.size());
    int value = 0;
    auto [ptr, ec] = std::from_chars(code.data(), code.data() + code.size(), value);
    if (ec != std::errc() || ptr != code.data() + code.size()) return false;
    out.status.exit_code = value;
    return true;
  }
  if (what == "Out Of Memory") {
    out.out_of_memory = true;
    out.status.signal = SIGKILL;  // the OOM killer's signal
    return true;
  }
  constexpr std::string_view kCore = " (core dumped)";
  if (what.ends_with(kCore)) what.remove_suffix(kCore.size());
  out.status.signal = signal_from_description(what);
  return out.status.signal != 0;
}

}  // namespace

int signal_from_description(std::string_view name) {
  // srun words a signal with strsignal(); the same C library answers the reverse question.
  for (int sig = 1; sig < NSIG; ++sig) {
    const char* text = ::strsignal(sig);
    if (text != nullptr && name == text) return sig;
  }
  return 0;
}

bool SrunReport::add(std::string_view raw) {
  const std::string_view line = trim(raw);
  if (line.starts_with(kSrunError)) {
    const std::string_view rest = line.substr(kSrunError.size());
    constexpr std::string_view kNodeFailure = "Node failure on ";
    if (rest.starts_with(kNodeFailure)) {
      failure_lines_.emplace_back(line);
      auto nodes = expand_hostlist(rest.substr(kNodeFailure.size()));
      for (const std::string& n : nodes ? *nodes : std::vector<std::string>{}) {
        if (std::find(failed_nodes_.begin(), failed_nodes_.end(), n) == failed_nodes_.end()) {
          failed_nodes_.push_back(n);
        }
      }
      return true;
    }
    SrunTaskExit exit;
    if (parse_task_exit(rest, line, exit)) exits_.push_back(std::move(exit));
    return true;
  }
  // srun's own notes ("srun: Job step aborted: ...", "srun: forcing job termination").
  if (line.starts_with("srun: ")) return true;
  // "slurmstepd-n1: error: *** STEP 4.0 ON n1 CANCELLED AT ... DUE TO NODE FAILURE, ... ***"
  if (line.starts_with("slurmstepd") && line.find(": error: *** ") != std::string_view::npos) {
    if (line.find("DUE TO NODE FAILURE") != std::string_view::npos) {
      failure_lines_.emplace_back(line);
    }
    return true;
  }
  return false;
}

const SrunTaskExit* SrunReport::first_failure() const {
  for (const SrunTaskExit& e : exits_) {
    if (e.status.signal == 0 ? e.status.exit_code != 0
                             : e.status.signal != SIGTERM && e.status.signal != SIGKILL) {
      return &e;
    }
    if (e.out_of_memory) return &e;
  }
  return exits_.empty() ? nullptr : &exits_.front();
}

}  // namespace bigmac::launch
