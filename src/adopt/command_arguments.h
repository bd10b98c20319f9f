#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bigmac::adopt {

/// What an argument of the user's command stands for, once recognised.
enum class ArgumentRole {
  kSeed,            ///< train.seed, {seed}
  kMaxSteps,        ///< train.max_steps, {max_steps}
  kMicroBatchSize,  ///< train.micro_batch_size, {micro_batch_size}
  kGradAccum,       ///< train.gradient_accumulation_steps, {grad_accum}
  kSeqLength,       ///< train.seq_length, {seq_length}
  kLr,              ///< train.lr, {lr}
  kLogFile,         ///< {log_file}: the tool gives each rank a file and reads it
  kConfig,          ///< {gate_config} when the file is a bigmac-bringup configuration
  /// Where the program writes (and resumes) its checkpoints or outputs: each gate gets its own
  /// path in its attempt folder, `{attempt_dir}/<the file's or folder's name>`, so no gate
  /// resumes what an earlier one wrote.
  kCheckpointPath,
  /// A framework's device and node counts (Lightning's `--devices`, `--num_nodes`, also as
  /// `--trainer.devices`): each gate's layout, `{nproc_per_node}` and `{nnodes}`, so that the
  /// framework runs in the processes the launcher starts (docs/frameworks.md).
  kDevices,
  kNodes,
};

/// How an argument was found: by its flag's spelling, or from the program's argparse parser (a
/// positional whose `dest` names it, or a default the parser has and the command left out, which
/// is added to the command so that the gates can set it).
enum class FoundBy { kSpelling, kPositional, kDefault };

/// An argument of the command that the gates will set: `--seed 1` or `--seed=1`.
struct RecognisedArgument {
  ArgumentRole role;
  std::string flag;         ///< as written: "--max_iters"
  std::string value;        ///< as written: "20"
  std::size_t value_index;  ///< index of the argv entry holding the value
  bool joined = false;      ///< `--flag=value` (one entry) rather than two entries
  FoundBy found_by = FoundBy::kSpelling;
};

/// How an argument is shown: `--lr 0.1`, `batch_size 32 (positional)`, `--batch_size 32 (its
/// argparse default, added to the command)`.
std::string shown_argument(const RecognisedArgument& argument);

/// Whether `value` reads as the type of what `role` sets.
bool value_fits(ArgumentRole role, std::string_view value);

/// The schema key a role sets ("train.seed"); empty for kLogFile, kConfig, kCheckpointPath and
/// the layout's kDevices and kNodes.
std::string setting_key(ArgumentRole role);

/// The placeholder that replaces a role's value ("{seed}").
std::string placeholder(ArgumentRole role);

/// The role a flag's name spells, whatever its dashes and case (`--max-steps`, `--max_iters`,
/// `--train-iters`, `--batch-size`, `--learning-rate`, `--log-file`, `--config`), if any.
std::optional<ArgumentRole> role_of_flag(const std::string& flag);

/// Every argument of `argv` (after argv[0]) that a role's flag names and whose value reads as
/// that role's type (an integer for the seed and sizes, a number for the lr). A flag given twice
/// is recognised at its last occurrence, the one argparse keeps.
std::vector<RecognisedArgument> recognise_arguments(const std::vector<std::string>& argv);

/// The first `{name}` token of a word (a Python f-string in `python3 -c`), which a command
/// template would read as a placeholder; none when the word has no such token.
std::optional<std::string> brace_token(const std::string& word);

/// The placeholder text for one argument: `placeholder(role)`, or for a checkpoint path
/// `{attempt_dir}/` and the last part of the value as written.
std::string placeholder_of(const RecognisedArgument& argument);

/// `argv` with the value of each of `arguments` replaced by `values(argument)` (kept as written
/// when that returns nothing).
template <class Values>
std::vector<std::string> substitute(std::vector<std::string> argv,
                                    const std::vector<RecognisedArgument>& arguments,
                                    Values values) {
  for (const RecognisedArgument& a : arguments) {
    const std::optional<std::string> v = values(a);
    if (!v) continue;
    argv[a.value_index] = a.joined ? a.flag + "=" + *v : *v;
  }
  return argv;
}

}  // namespace bigmac::adopt
