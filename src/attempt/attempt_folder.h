#pragma once

#include <filesystem>
#include <vector>

#include "core/error.h"
#include "logs/rank_log.h"

namespace bigmac::attempt {

/// Whether `folder` is one gate attempt's folder of a run directory: it holds the gate's
/// effective configuration (gate.toml) beside the ranks' files.
bool is_attempt_folder(const std::filesystem::path& folder);

/// The ranks' logs of an attempt folder as its gate judged them. `read` holds each file's
/// records as read (one RankLog per file and rank, its first source the file): each is put where
/// the live watch puts it — `rank<N>.log` the trainer's own log file, `rank<N>.stdout`/`.stderr`
/// (and torchrun's worker files) its streams, `probe-rank<N>.jsonl` the probe's — and each rank
/// is merged by AttemptWatch::rank_log with the layout and step bound of the folder's gate.toml,
/// so a step the trainer printed and the probe recorded is one step, not one logged twice.
/// Logs of no rank are kept as read. An unreadable gate.toml is an input error naming it.
Expected<std::vector<logs::RankLog>> attempt_rank_logs(const std::filesystem::path& folder,
                                                       std::vector<logs::RankLog> read);

}  // namespace bigmac::attempt
