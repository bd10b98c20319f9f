#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "diagnose/metric_rules.h"
#include "logs/rank_log.h"

namespace bigmac::diagnose {

/// The files named by `paths`: a file as given; a directory recursively, taking files that
/// look like logs (.log .txt .out .err .jsonl, or no extension) in name order, so reports and
/// state files in a run directory are not read as logs. Errors name an unreadable path.
Expected<std::vector<std::filesystem::path>> collect_log_files(
    const std::vector<std::string>& paths);

/// `files` (from collect_log_files over `paths`) split into the sets diagnosed together. A run
/// directory (one holding state.json) gives one set per folder in it, one per gate attempt:
/// rank 0 of `single` and rank 0 of `dp` are different processes, and their steps must not be
/// read as one rank logging each step twice. All other files form one set.
std::vector<std::vector<std::filesystem::path>> group_log_files(
    const std::vector<std::string>& paths, const std::vector<std::filesystem::path>& files);

/// The rank a file name implies when its lines carry none: `rank3.log`, `rank-3.txt`, or
/// torchrun's `--log-dir` layout `.../attempt_0/3/stderr.log`; -1 when nothing says.
int rank_from_file_name(const std::filesystem::path& file);

class TextScan;

/// Reads one file through logs::stream_log_file as `options` say (launcher prefixes, else the
/// file name, give the rank) into one RankLog per rank it holds, each labelled with the file.
/// With `scan`, text lines go to the scan as they are read and are not kept, so memory stays
/// bounded by the typed records however long the log is; without it they are kept in each
/// rank's bounded context window.
Expected<std::vector<logs::RankLog>> read_log_records(const std::filesystem::path& file,
                                                      TextScan* scan = nullptr,
                                                      const logs::ParserOptions& options = {});

}  // namespace bigmac::diagnose
