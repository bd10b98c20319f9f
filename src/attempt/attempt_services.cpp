#include "attempt/attempt_services.h"

#include <chrono>

#include "proc/posix_process_runner.h"

namespace bigmac::attempt {

AttemptServices host_services(const std::atomic<bool>& cancel, report::Progress& progress,
                              const diagnose::Diagnoser& diagnoser) {
  static const launch::SteadyClock steady;
  AttemptServices services;
  services.make_runner = [] { return std::make_unique<proc::PosixProcessRunner>(); };
  services.clock = &steady;
  services.probe_devices = [] { return launch::probe_devices(); };
  services.wall_time = [] {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  services.cancel = &cancel;
  services.progress = &progress;
  services.diagnoser = &diagnoser;
  return services;
}

}  // namespace bigmac::attempt
