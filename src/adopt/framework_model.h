#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "adopt/command_arguments.h"
#include "adopt/trial_logs.h"

namespace bigmac::adopt {

/// A variable the gates set in every rank's environment ([trainer.env]) so that a framework
/// runs what the gate planned: its value template (`{nproc_per_node}`) and why.
struct FrameworkVariable {
  std::string value;
  std::string comment;
};

/// What the frameworks a program trains through decided in the trials, read from the probe's
/// `framework` events (docs/frameworks.md), and what the draft must set for every gate's layout
/// to be the one the framework runs.
struct FrameworkModel {
  /// "transformers", "accelerate", "lightning": each framework seen, outermost first (a
  /// Hugging Face Trainer builds an Accelerator of its own).
  std::vector<std::string> names;
  /// Report lines: the batch arithmetic, the step counter, what the program fixes itself.
  std::vector<std::string> notes;
  /// [trainer.env] for the gates, by name; the same with the second trial's values.
  std::map<std::string, FrameworkVariable> env;
  std::map<std::string, std::string> second_trial_env;
  /// Its strategy forms a process group once told the devices (a Lightning Trainer that ran
  /// on one device in the first trial): the program is distributed, said so with the evidence.
  bool distributes = false;
  std::string distributes_evidence;
  /// Why the trainer's own step lines are not read (the probe's steps stand in); empty: read.
  std::string lines_not_read;
};

/// The `framework` events of one probe log, in order (none when the file is missing).
std::vector<nlohmann::json> read_framework_events(const std::filesystem::path& probe_log);

/// The first trial's events, with the arguments the command's flags hand over and the log
/// format the trial found: the settings a framework takes from its environment when the program
/// leaves them at their defaults (Lightning's PL_TRAINER_DEVICES, ..._NUM_NODES,
/// ..._ACCUMULATE_GRAD_BATCHES), its arithmetic, and whether its printed lines can be read.
FrameworkModel model_frameworks(const std::vector<nlohmann::json>& events,
                                const std::vector<RecognisedArgument>& arguments,
                                const TrialLogs& logs);

/// The second trial (two processes) from each rank's events: a framework that joined fewer
/// processes than the launcher started runs each rank alone, and the notes say why and what to
/// change.
void check_second_trial(const std::vector<std::vector<nlohmann::json>>& ranks,
                        FrameworkModel& model);

}  // namespace bigmac::adopt
