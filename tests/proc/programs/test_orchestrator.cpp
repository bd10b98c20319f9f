// A minimal orchestrator: starts one hanging rank through PosixProcessRunner, prints the rank's
// pid, and waits forever. The test kills it with SIGKILL (no teardown runs) and checks that the
// rank dies anyway, through PR_SET_PDEATHSIG.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "proc/posix_process_runner.h"

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  bigmac::proc::PosixProcessRunner runner;
  bigmac::proc::RankSpec spec;
  spec.argv = {argv[1], "hang-after"};
  auto pid = runner.spawn(spec);
  if (!pid) {
    std::fprintf(stderr, "%s\n", pid.error().format().c_str());
    return 3;
  }
  std::printf("rank %d\n", static_cast<int>(*pid));
  std::fflush(stdout);
  for (;;) pause();
}
