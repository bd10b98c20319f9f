#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace bigmac::cli {

/// Finishes every command's help once all commands exist: the command's exit codes and one or
/// two examples as its footer, metavars (FILE, DIR, GATE, KEY=VALUE) for the options CLI11
/// would show as TEXT, and no "REQUIRED"/default noise the descriptions already say.
void finish_help(CLI::App& app);

/// For a parse error about an argument the command does not know ("--unt"): a message naming
/// it with the command, the closest option of that command ("did you mean '--until'?", a unique
/// prefix first, then a near spelling) and how to list them. nullopt for other errors.
std::optional<std::string> unknown_option_message(CLI::App& app, const CLI::ParseError& error);

/// `completion SHELL`: prints a completion script for bash, zsh or fish built from the command
/// tree (commands, their options, gate names after run/--from/--until).
void add_completion_command(CLI::App& app, int& exit_code);

/// The script for `shell` ("bash", "zsh", "fish"); nullopt for another shell.
std::optional<std::string> completion_script(CLI::App& app, std::string_view shell);

}  // namespace bigmac::cli
