#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "adopt/field_proposal.h"
#include "core/error.h"
#include "logs/log_format.h"
#include "logs/rank_log.h"

namespace bigmac::adopt {

/// Where the trial's output went.
struct TrialOutputs {
  std::filesystem::path log_file;  ///< the trainer's own log file; empty: none
  std::filesystem::path stdout_path;
  std::filesystem::path stderr_path;
  std::filesystem::path probe_log;  ///< empty: probe off
};

/// What the trial's logs say, read the way the gates will read them.
struct TrialLogs {
  /// The format of the trainer's own step lines: what `auto` detected in the first output that
  /// has steps with a loss, kRegex for lines read by `proposal`, kAuto when the trainer printed
  /// no loss the tool can read.
  logs::LogFormat format = logs::LogFormat::kAuto;
  std::string format_source;              ///< "the log file", "stdout", "stderr"; empty with kAuto
  std::string example;                    ///< the first step line as printed
  std::optional<FieldProposal> proposal;  ///< set with kRegex
  logs::RankLog trainer;            ///< the trainer's own records, from the source of `format`
  logs::RankLog probe;              ///< the probe's events
  logs::RankLog merged;             ///< the two merged as the run path merges them
  std::int64_t trainer_losses = 0;  ///< trainer steps that carry a loss
  std::int64_t probe_losses = 0;    ///< probe steps that carry a loss
  /// Set when the trainer's step lines outnumber the optimizer steps (a loss printed per
  /// closure call or micro-batch, or by an evaluation too): "31 loss lines for 6 optimizer
  /// steps". Its lines are then not read as steps (format kBigmac) and the probe's stand in.
  std::string not_per_step;
};

/// Drops the trainer's step lines when they outnumber the optimizer steps the probe counted,
/// saying so in `not_per_step`.
void keep_one_line_per_step(TrialLogs& logs);

/// The trainer's step lines taken out: not read as steps (format kBigmac), the probe's stand in
/// (keep_one_line_per_step; a framework's rounded log lines, FrameworkModel::lines_not_read).
void drop_trainer_lines(TrialLogs& logs);

/// Reads the trial's outputs: detects the trainer's format, or proposes a `[logs.fields]` map for
/// lines that carry a loss and checks that the map reads them; reads the probe log and merges.
/// An unreadable output is an input Error naming it.
Expected<TrialLogs> read_trial_logs(const TrialOutputs& outputs);

/// The last `count` non-empty lines of a file (stderr of a command that failed), for messages.
std::vector<std::string> last_lines(const std::filesystem::path& file, std::size_t count);

}  // namespace bigmac::adopt
