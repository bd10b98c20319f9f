#pragma once

#include <atomic>

namespace bigmac::cli {

/// Installs SIGINT, SIGTERM and SIGHUP handlers that set one flag and return, so a run can stop its
/// ranks, save its state as interrupted and exit 130. Without SA_RESTART: a blocking poll in
/// the launcher wakes at once. Installing twice is harmless.
const std::atomic<bool>& install_interrupt_flag();

}  // namespace bigmac::cli
