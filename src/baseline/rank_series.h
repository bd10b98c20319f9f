#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "logs/parser_options.h"
#include "logs/record.h"

namespace bigmac::baseline {

/// A step as one log file holds it.
struct LoggedStep {
  logs::StepRecord step;
  std::string file;
};

/// One rank's part of the logs `compare` was given: its records (run, model, batch, steps) and
/// its steps in file and line order with the file of each. A rank's steps may be spread over
/// several files; a file whose lines name no rank (and whose name and `run` record say none)
/// is a series of its own.
struct RankSeries {
  int rank = -1;
  std::string label;  ///< "rank 3", or the file of a series with no rank
  std::vector<logs::Record> records;
  std::vector<LoggedStep> steps;
};

/// The series of `paths`, by rank (lowest first), then the files with no rank in the order
/// given. A line without a rank belongs to the rank its file's name gives (`rank3.log`), else to
/// the rank of the file's one `run` record.
Expected<std::vector<RankSeries>> read_rank_series(const std::vector<std::filesystem::path>& paths,
                                                   const logs::ParserOptions& options = {});

/// Why a series cannot be compared with anything, or nullopt: a step it logs twice (which of
/// the two is the run's?), or a loss, grad_norm or lr that is not finite. The message names the
/// series, the step and the file and line.
std::optional<std::string> series_contradiction(const RankSeries& series);

}  // namespace bigmac::baseline
