#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "baseline/comparison.h"
#include "core/error.h"
#include "core/exit_code.h"
#include "logs/parser_options.h"
#include "logs/record.h"

namespace bigmac::baseline {

/// What a `baseline ...` or `compare` command prints and how it exits; the CLI prints `text`
/// to stdout and returns `code`.
struct CommandResult {
  ExitCode code = ExitCode::kOk;
  std::string text;
};

/// Every record of a log file, in line order, read as `options` say (logs::parser_options of
/// the configuration; default: detected).
Expected<std::vector<logs::Record>> read_log_records(const std::filesystem::path& path,
                                                     const logs::ParserOptions& options = {});

/// `baseline show FILE`.
CommandResult show_baseline(const std::filesystem::path& path);

/// `baseline diff A B`: exit 0 when identical, 1 when they differ, 2 when unreadable.
CommandResult diff_baseline_files(const std::filesystem::path& a, const std::filesystem::path& b);

/// `baseline record`: writes `out` from a gate's records. Refuses (exit 1) when the gate did
/// not pass or a value is non-finite. `recorded` (commit, trainer digest, settings) is stored
/// beside the fingerprint.
CommandResult record_baseline(const std::vector<logs::Record>& records, bool gate_passed,
                              const std::filesystem::path& out, const std::string& name,
                              const std::string& config_digest, const Recorded& recorded = {});

/// `compare LOG... --baseline FILE`: exit 0 on match or drift, 1 on regression or when nothing
/// was compared, 2 on unreadable input. `policy` comes from the gate spec (`--gate`), `options`
/// from the configuration.
CommandResult compare_logs(const std::vector<std::filesystem::path>& logs,
                           const std::filesystem::path& baseline_file,
                           const ComparisonPolicy& policy = {},
                           const logs::ParserOptions& options = {});

}  // namespace bigmac::baseline
