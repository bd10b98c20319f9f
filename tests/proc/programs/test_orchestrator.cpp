// A minimal orchestrator: starts one rank through PosixProcessRunner with the given mode, its
// stdout to OUT_FILE, prints the rank's pid (its shepherd's) and polls forever. The test kills
// it with SIGKILL (no teardown runs) and checks that the rank and everything the rank started
// die anyway.
//   bigmac-test-orchestrator OUT_FILE RANK_PROGRAM MODE [ARGS...]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "proc/posix_process_runner.h"

int main(int argc, char** argv) {
  if (argc < 4) return 2;
  bigmac::proc::PosixProcessRunner runner;
  bigmac::proc::RankSpec spec;
  spec.argv.assign(argv + 2, argv + argc);
  spec.stdout_path = argv[1];
  auto pid = runner.spawn(spec);
  if (!pid) {
    std::fprintf(stderr, "%s\n", pid.error().format().c_str());
    return 3;
  }
  std::printf("rank %d\n", static_cast<int>(*pid));
  std::fflush(stdout);
  // Polling copies the rank's output to OUT_FILE as it comes.
  for (;;) runner.poll(std::chrono::milliseconds(1000), nullptr);
}
