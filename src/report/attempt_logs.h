#pragma once

#include <filesystem>
#include <vector>

#include "core/error.h"
#include "logs/parser_options.h"
#include "logs/rank_log.h"

namespace bigmac::report {

/// Every rank's records in an attempt folder, read again from its files as the live watch read
/// them (for an attempt that left no records.json, and for `baseline record`): the rank's own
/// log file (`rank<N>.log`, the trainer's `--log-file`) when it holds records, else what the
/// rank printed (`rank<N>.stdout`, `rank<N>.stderr`). `parser` is the run's (logs::
/// parser_options of its configuration). Ranks in order; an unreadable file is an input Error
/// naming it; a folder with no rank files gives no ranks.
Expected<std::vector<logs::RankLog>> read_attempt_logs(const std::filesystem::path& dir,
                                                       const logs::ParserOptions& parser);

}  // namespace bigmac::report
