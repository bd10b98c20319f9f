#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "logs/parser_options.h"
#include "logs/rank_log.h"

namespace bigmac::diagnose {

/// `bigmac-bringup diagnose LOG... [--json] [--catalog FILE]`.
struct DiagnoseOptions {
  std::vector<std::string> paths;  ///< log files or directories of logs
  bool json = false;
  /// Empty: $BIGMAC_DIAGNOSES when set, else the catalog built into the program.
  std::string catalog;
  /// How the logs are read (`-c`: the configuration's format and [logs.fields]; else auto).
  logs::ParserOptions parser;
  /// The ranks' logs of files that lie in one folder, from each file's records as read: the cli
  /// passes attempt::attempt_rank_logs, which merges a gate attempt's folder (a rank's own
  /// log, its streams and the probe's file) as its gate did and leaves other folders as read.
  /// Empty: each file's records as read.
  std::function<Expected<std::vector<logs::RankLog>>(const std::filesystem::path& folder,
                                                     std::vector<logs::RankLog> read)>
      merge_folder{};
  /// Print what the message catalog covers (collected, classified, matchable, diagnosed, by
  /// library) instead of reading logs.
  bool coverage = false;
};

/// Reads the logs (any run, including ones this tool did not start), prints every diagnosis
/// best first, as text or JSON. Returns the exit code: 0 a diagnosis was found, 1 none,
/// 2 unreadable input or a bad catalog (printed on `err`).
/// `gate_ids`: the gate files' ids, which every catalog entry must route back to (the cli
/// passes them; empty: not checked).
int run_diagnose(const DiagnoseOptions& options, std::ostream& out, std::ostream& err,
                 const std::vector<std::string>& gate_ids = {});

}  // namespace bigmac::diagnose
