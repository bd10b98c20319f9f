#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "launch/run_result.h"

namespace bigmac::report {

/// How one rank process of an attempt ended, as `result.json` records it.
struct RankResult {
  int rank = 0;
  std::optional<int> exit_code;  ///< empty when it never exited by itself (signal, never started)
  std::string signal;            ///< "SIGKILL" when a signal ended it
  double duration_s = 0;
  std::string first_error_line;
  std::string node;                      ///< where it ran, when the launcher said
  bool node_failed = false;              ///< Slurm reported that node failed
  std::vector<std::string> error_lines;  ///< its last stderr lines, prefixes stripped
};

/// `result.json` of one gate attempt: when it started, how long it ran, how each rank ended.
/// Written by the run loop (from launch::RunResult, see attempt_result_of) beside the logs.
struct AttemptResult {
  std::string status;     ///< launch::run_status_name: succeeded, failed, stalled, ...
  double started_at = 0;  ///< Unix seconds; 0 when unknown
  double duration_s = 0;
  std::vector<RankResult> ranks;
};

nlohmann::json to_json(const AttemptResult& result);
AttemptResult attempt_result_from_json(const nlohmann::json& json);

/// The result.json form of a launch result; `started_at` is the wall time of the launch.
AttemptResult attempt_result_of(const launch::RunResult& result, double started_at);

}  // namespace bigmac::report
