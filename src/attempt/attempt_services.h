#pragma once

#include <atomic>
#include <functional>
#include <memory>

#include "diagnose/diagnoser.h"
#include "launch/clock.h"
#include "launch/device_inventory.h"
#include "proc/process_runner.h"
#include "report/progress.h"

namespace bigmac::attempt {

/// What a gate attempt needs from the world, passed in so that a test drives a whole attempt
/// with a fake process runner, a fake clock and no GPUs.
struct AttemptServices {
  /// A fresh runner per attempt (all ranks of one attempt share its process group).
  std::function<std::unique_ptr<proc::ProcessRunner>()> make_runner;
  const launch::Clock* clock = nullptr;
  std::function<launch::DeviceInventory()> probe_devices;
  std::function<double()> wall_time;          ///< Unix seconds, for result.json
  const std::atomic<bool>* cancel = nullptr;  ///< set by Ctrl-C: ranks stopped, resumable
  report::Progress* progress = nullptr;
  const diagnose::Diagnoser* diagnoser = nullptr;
};

/// The real world: POSIX processes, the steady clock, devices probed on this host.
AttemptServices host_services(const std::atomic<bool>& cancel, report::Progress& progress,
                              const diagnose::Diagnoser& diagnoser);

}  // namespace bigmac::attempt
