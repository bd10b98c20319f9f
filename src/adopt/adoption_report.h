#pragma once

#include <string>
#include <vector>

#include "adopt/command_arguments.h"
#include "adopt/framework_model.h"
#include "adopt/gate_outlook.h"
#include "adopt/launcher_prefix.h"
#include "adopt/program_model.h"
#include "adopt/trial_logs.h"
#include "adopt/trial_run.h"

namespace bigmac::adopt {

/// What the report of one adoption is made of.
struct ReportInputs {
  const std::vector<std::string>& command;     ///< as the user gave it
  const std::vector<std::string>& trial_argv;  ///< as the trial ran it
  const TrialRun& run;
  const TrialLogs& logs;
  const std::vector<RecognisedArgument>& arguments;
  std::string user_config;  ///< the bigmac-bringup configuration `--config` named, or ""
  const std::vector<GateOutlook>& outlook;
  const ProgramModel& model;
  std::string kept_folder;  ///< where the trial's output stays, or "" when removed
  const FrameworkModel* frameworks = nullptr;       ///< what its frameworks decided; null: none
  const LauncherPrefix* launcher_prefix = nullptr;  ///< `accelerate launch` it ran; null: none
};

/// The terminal text: how the trial went, the log format and where each field comes from, the
/// arguments turned into placeholders and the settings the gates cannot hand over, then per
/// gate what it can check and, for each check it cannot make, what to log.
std::string adoption_report(const ReportInputs& in);

}  // namespace bigmac::adopt
