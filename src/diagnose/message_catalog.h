#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/data_file.h"
#include "core/error.h"

namespace bigmac::diagnose {

/// One message a library can print, as its source writes it (stages/messages/<library>.toml,
/// collected by scripts/collect-messages): literal text with `{}` where a value goes.
struct Message {
  std::string text;
  std::string where;     ///< the file (or function) that prints it
  std::string versions;  ///< the scanned versions that print it ("1.13.1..2.11.0")
  std::string level;     ///< error | warning
  std::string kind;      ///< the exception type or macro (`RuntimeError`, `TORCH_CHECK`, `WARN`)
  std::string klass;     ///< failure class; empty: collected, not classified
  int line = 0;          ///< where the entry starts in its file
};

/// The messages of one library, with where they were collected from.
struct MessageLibrary {
  std::string name;  ///< `pytorch`, `nccl`, `gloo`, `cuda`, `system`, `accelerate`...
  std::string path;  ///< its file (for errors)
  std::string from;  ///< repository and packages the sources came from
  std::vector<std::string> versions;  ///< the versions scanned, oldest first
  std::vector<Message> messages;

  std::size_t classified() const;
};

/// Reads one library's file; errors name the file, line and key.
Expected<MessageLibrary> parse_message_library(const config::DataFile& file);

/// The libraries compiled into the program from stages/messages/*.toml, by name.
Expected<std::vector<MessageLibrary>> builtin_message_libraries();

/// What a log line shows of `message`, to search for: its text, after `NCCL WARN ` for NCCL's
/// WARN (NCCL prints every one after those words, which name it as much as its own do: `Cuda
/// failure '{}'` alone is too little to search for).
std::string printed_text(const Message& message);

/// The RE2 pattern that finds `text` (a message template) in a log line: the literal words of
/// its most specific line with any value between them, `\s+` between words. Nothing when that
/// line has too little literal text to name the message (fewer than three words or twelve
/// letters, unless it is one identifier such as `CUBLAS_STATUS_EXECUTION_FAILED`).
std::optional<std::string> message_pattern(std::string_view text);

/// The longest literal run of the line message_pattern searches for, as RE2 (`\s+` between
/// words): what a one-pass set looks for before the pattern confirms. Nothing when the
/// message has no pattern.
std::optional<std::string> message_literal(std::string_view text);

/// The longest literal run of the line message_pattern searches for, as plain words (one
/// space between them); nothing when the message has no pattern.
std::optional<std::string> message_words(std::string_view text);

/// A message of a library: `libraries[library].messages[message]`.
struct MessageRef {
  std::size_t library = 0;
  std::size_t message = 0;
};

/// For each line, the library message it prints (the one with the longest literal whose
/// pattern matches), classified or not; nothing where none does. One pass over the messages:
/// meant for the few lines a "no diagnosis" names, not for every line of a log.
std::vector<std::optional<MessageRef>> find_messages(const std::vector<MessageLibrary>& libraries,
                                                     const std::vector<std::string>& lines);

/// How many messages of a library have a pattern (message_pattern), for the coverage report.
std::size_t matchable(const MessageLibrary& library);

/// One library's line of the coverage report.
struct MessageCoverage {
  std::string library;
  std::string versions;       ///< oldest..newest scanned
  std::size_t collected = 0;  ///< templates found in the sources
  std::size_t classified = 0;
  std::size_t matchable = 0;   ///< with a pattern specific enough to search for
  std::size_t signatures = 0;  ///< classified, matchable errors (and NCCL WARN): diagnosed
};

/// What `diagnose --coverage` prints: `signatures[l]` is how many signatures library `l` gave.
std::vector<MessageCoverage> message_coverage(const std::vector<MessageLibrary>& libraries,
                                              const std::vector<std::size_t>& signatures);

/// The report as a Markdown table (docs/diagnosis.md carries one), with a total row.
std::string coverage_table(const std::vector<MessageCoverage>& rows);

}  // namespace bigmac::diagnose
