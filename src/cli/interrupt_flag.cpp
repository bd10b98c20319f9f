#include "cli/interrupt_flag.h"

#include <signal.h>

namespace bigmac::cli {
namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void on_interrupt(int) { g_interrupted.store(true); }

}  // namespace

const std::atomic<bool>& install_interrupt_flag() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  // An ssh session or terminal that closes: the run stops as on Ctrl-C, its state saved.
  sigaction(SIGHUP, &action, nullptr);
  return g_interrupted;
}

}  // namespace bigmac::cli
