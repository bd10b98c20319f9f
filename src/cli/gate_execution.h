#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "cli/run_context.h"
#include "diagnose/diagnoser.h"
#include "gates/run_directory.h"
#include "gates/run_loop.h"
#include "report/progress.h"

namespace bigmac::cli {

/// Runs one gate for real: plans it, writes its gate file and launch plan into the attempt
/// folder, checks preflight, starts the ranks under the watchdog, evaluates the checks on what
/// the logs and exit codes show, records this run's baseline after a first passing `single`,
/// and diagnoses a failure. Every attempt folder holds gate.toml, launch-plan.json, the rank
/// logs, result.json, verdict.json and (on failure) diagnosis.json.
class ProcessGateExecutor final : public gates::GateExecutor {
 public:
  ProcessGateExecutor(const RunContext& context, const gates::RunDirectory& run_dir,
                      const diagnose::Diagnoser& diagnoser, const std::atomic<bool>& cancel,
                      report::Progress& progress);

  gates::GateOutcome execute(const std::string& gate, int attempt) override;

 private:
  gates::GateOutcome aborted(std::string message) const;

  const RunContext& context_;
  const gates::RunDirectory& run_dir_;
  const diagnose::Diagnoser& diagnoser_;
  const std::atomic<bool>& cancel_;
  report::Progress& progress_;
};

}  // namespace bigmac::cli
