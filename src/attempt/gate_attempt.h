#pragma once

#include <filesystem>
#include <string>

#include "attempt/attempt_services.h"
#include "attempt/run_context.h"
#include "run/run_loop.h"

namespace bigmac::attempt {

/// One gate attempt, top to bottom (docs/architecture.md §3): plan → preflight → launch and
/// watch → evaluate → verdict → persist. Each phase is a function of its own in this folder;
/// this one calls them in order and says what the run loop observes: GateFinished (the
/// verdict, printed through the services' progress), Interrupted, or GateAborted
/// (infrastructure: it could not launch or write, or the master port was taken at the bind).
/// The first gate of a run without a stored baseline records `<run_dir>/baseline.json`.
run::Observation run_attempt(const RunContext& context, const std::filesystem::path& run_dir,
                             const std::string& gate, int attempt, AttemptServices& services);

/// The run loop's executor over run_attempt.
class AttemptExecutor final : public run::GateExecutor {
 public:
  AttemptExecutor(const RunContext& context, std::filesystem::path run_dir,
                  AttemptServices services)
      : context_(context), run_dir_(std::move(run_dir)), services_(std::move(services)) {}

  run::Observation execute(const std::string& gate, int attempt) override {
    return run_attempt(context_, run_dir_, gate, attempt, services_);
  }

 private:
  const RunContext& context_;
  std::filesystem::path run_dir_;
  AttemptServices services_;
};

}  // namespace bigmac::attempt
