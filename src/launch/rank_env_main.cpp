// bigmac-rank-env: the exec-wrapper between a launcher and a trainer. Under srun it turns
// Slurm's task identity (SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS, SLURM_NODEID, the step's
// node list) into the environment torchrun gives its workers, so that an unmodified
// torchrun-style trainer runs as an srun task; per node it fills in a torchrun agent's
// --node_rank and rendezvous endpoint; under torchrun it sends each worker's output to files of
// its own. It prints where the rank runs on the rank's stderr and then execs the program.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/exit_code.h"
#include "launch/task_environment.h"
#include "proc/program_exec.h"

namespace {

int fail(const bigmac::Error& error) {
  std::fprintf(stderr, "bigmac-rank-env: error: %s\n", error.format().c_str());
  return static_cast<int>(bigmac::exit_code_for(error.kind));
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace bigmac;
  auto request = launch::parse_task_request(std::vector<std::string>(argv + 1, argv + argc));
  if (!request) return fail(request.error());
  const launch::EnvLookup getenv = [](const char* name) { return std::getenv(name); };
  const std::string scontrol = request->scontrol;
  const launch::AddressResolver resolve = [&scontrol](const std::string& node) {
    return launch::node_address(node, scontrol);
  };
  auto exec = launch::plan_task_exec(*request, getenv, resolve, host_name(), ::getppid());
  if (!exec) return fail(exec.error());
  if (!exec->stdout_path.empty()) {
    if (auto r = proc::redirect_output(exec->stdout_path, exec->stderr_path); !r) {
      return fail(r.error());
    }
  }
  if (exec->placement) {
    std::fprintf(stderr, "%s\n", launch::placement_line(*exec->placement).c_str());
    std::fflush(stderr);
  }
  return fail(proc::exec_program(exec->argv, exec->env));
}
