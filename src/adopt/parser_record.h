#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "adopt/command_arguments.h"

namespace bigmac::adopt {

/// One action of the program's own argparse parser, as the probe described it
/// (BIGMAC_PROBE_ARGPARSE, docs/probe.md "The program's arguments").
struct ParserAction {
  std::string dest;
  std::vector<std::string> options;  ///< empty for a positional argument
  /// How many words it takes: 1 for nargs=None, n for an integer nargs, none for `?`, `*`, `+`,
  /// `...` (a count the walk cannot know).
  std::optional<std::size_t> words;
  bool takes_value = false;  ///< an option that takes words (not store_true, count, help)
  bool store = false;        ///< a plain store action
  std::string type;          ///< "int", "float", "str", or empty
  std::optional<std::string> default_text;  ///< a number or string default, as argv would spell it
};

/// The first parse of the program's command line: its sys.argv and the parser's actions.
struct ParserRecord {
  std::vector<std::string> argv;
  std::vector<ParserAction> actions;
};

/// The record the trial's probe wrote at `path`; none when the program parsed no command line
/// with argparse (no file) or the file does not read as one.
std::optional<ParserRecord> read_parser_record(const std::filesystem::path& path);

/// What the parser adds to the arguments recognised by spelling (`arguments`, in place):
/// positional arguments whose `dest` names a role, options written in a spelling the names do
/// not reveal (`-b 32` for `dest = batch_size`), and options with a default the command does not
/// pass, which are appended to `command` (flag and default) so that the gates can set them.
/// Only the settings a gate hands over as a number (micro-batch, accumulation, sequence length,
/// lr, seed) are added; a command whose tail is not the record's argv is left as it is.
void recognise_with_parser(const ParserRecord& record, std::vector<std::string>& command,
                           std::vector<RecognisedArgument>& arguments);

}  // namespace bigmac::adopt
