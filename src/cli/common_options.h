#pragma once

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iosfwd>
#include <string>
#include <vector>

#include "config/config.h"
#include "logs/parser_options.h"

namespace bigmac::cli {

/// Options shared by the commands that read a configuration.
struct CommonOptions {
  std::string config_file;        ///< -c/--config; empty = built-in defaults (= configs/demo.toml)
  std::vector<std::string> sets;  ///< --set table.key=value, in order
};

void add_config_options(CLI::App& command, CommonOptions& options);

/// For an option or positional that names something (a gate, a file, a directory): an empty
/// value and a bare `--` are usage errors, never "the default" (`run ''` ran every gate,
/// `--run-dir --` made a folder named `--`). `what` says what was expected ("a gate").
CLI::Validator named_value(std::string what);

/// Loads the configuration: file, BIGMAC_* environment, --set.
tl::expected<config::Config, Errors> load_config(const CommonOptions& options);

/// How the commands that read logs by hand (parse, diagnose, compare) read them: the
/// configuration's logs::parser_options when one is named (-c or --set), else `auto`.
tl::expected<logs::ParserOptions, Errors> log_parser_options(const CommonOptions& options);

/// Records argv[0] as the program was started (before any change of directory), for commands
/// printed for the user to paste.
void set_invoked_as(const char* argv0);

/// The program as the user can type it from `cwd`: `bigmac-bringup` when that name on PATH is
/// this program (or it was started by name), else its path, relative to `cwd` when shorter.
std::string invoked_program(const std::filesystem::path& cwd);

/// `path` relative to `base` when that is shorter to type, else absolute.
std::string shorter_path(const std::filesystem::path& path, const std::filesystem::path& base);

/// Prints errors as `bigmac-bringup: error: file:line:col: key: message (hint)`.
void print_errors(std::ostream& err, const Errors& errors);

}  // namespace bigmac::cli
