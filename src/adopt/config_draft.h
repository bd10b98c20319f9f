#pragma once

#include <optional>
#include <string>
#include <vector>

#include "adopt/command_arguments.h"
#include "adopt/field_proposal.h"
#include "adopt/framework_model.h"
#include "adopt/launcher_prefix.h"
#include "adopt/program_model.h"
#include "config/config.h"
#include "logs/rank_log.h"

namespace bigmac::adopt {

/// One `key = value` line of the written configuration, with the comment that says where the
/// value came from.
struct DraftValue {
  std::string key;      ///< "micro_batch_size"
  std::string value;    ///< TOML text: `8`, `"cpu"`
  std::string comment;  ///< "--batch-size 8 -> {micro_batch_size}"
};

/// A table of the written configuration.
struct DraftTable {
  std::string name;  ///< "train"
  std::string note;  ///< a comment line above the table; may be empty
  std::vector<DraftValue> values;
};

/// The configuration `adopt` writes, before it is text.
struct ConfigDraft {
  std::vector<std::string> original;  ///< the user's command, as given
  std::vector<DraftTable> tables;     ///< [launch] [parallel] [train] [model] [trainer]
  std::optional<FieldProposal> fields;
  bool one_based_counter = false;  ///< the proposal's counter is `step` (1-based)
};

/// What the draft is made of: the command, the arguments recognised in it, what the trial
/// showed, and the user's own bigmac-bringup configuration when `--config` named one.
struct DraftInputs {
  std::vector<std::string> original;
  std::vector<std::string> command;  ///< the template, placeholders in
  std::vector<RecognisedArgument> arguments;
  const config::Config* user_config = nullptr;  ///< the file of a kConfig argument
  std::string user_config_path;
  std::string log_format;  ///< format_name of the detected format
  std::string log_format_comment;
  std::optional<FieldProposal> fields;
  const logs::RankLog* trial = nullptr;  ///< the merged trial log (probe included)
  const logs::RankLog* probe = nullptr;  ///< the probe's own events of the trial
  double longest_silence_s = 0;
  bool torchrun_found = false;
  bool probe_explicit = false;  ///< write `probe = true` (the layering would not turn it on)
  /// The dp gate's processes. 1 when two cannot keep the trial's samples per step (an
  /// accumulation of 1): `nproc_note` says why.
  int nproc_per_node = 2;
  std::string nproc_note;
  /// Pipeline micro-batches of the pp2 and shapes gates when their 4 does not divide the
  /// samples per step (written as [gates] overrides); 0: the gates' own.
  int pipeline_micro_batches = 0;
  /// The program takes neither its micro-batch nor its accumulation from the gates: dp and
  /// target cannot keep samples/step and run as they are (rescale = "none"), so that their
  /// samples_per_step check says what to change.
  bool no_batch_knob = false;
  std::int64_t samples_per_step = 0;    ///< micro × accum, for the comment
  const ProgramModel* model = nullptr;  ///< what the trials measured; null: nothing
  /// What the frameworks it trains through take from their environment ([trainer.env]); null:
  /// none seen.
  const FrameworkModel* frameworks = nullptr;
  /// The command ran `accelerate launch`: the gates' launcher is accelerate, with its options.
  const LauncherPrefix* launcher_prefix = nullptr;
};

ConfigDraft draft_config(const DraftInputs& inputs);

/// The draft as a commented TOML file that load_config reads.
std::string draft_text(const ConfigDraft& draft);

/// An argv word as a comment or the terminal shows it: as it is when it has no blank, quote or
/// backslash, else as a quoted string with escapes (`-c 'import sys'`), never over two lines.
std::string shown_word(const std::string& word);

/// A TOML string: a literal string ('...') when it can be one, else a basic string with escapes.
std::string toml_string(const std::string& text);

}  // namespace bigmac::adopt
