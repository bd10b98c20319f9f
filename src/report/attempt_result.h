#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "launch/rank_ending.h"
#include "launch/run_result.h"

namespace bigmac::report {

/// `result.json` of one gate attempt: when it started, how long it ran, how each rank ended.
/// Written by the run loop (from launch::RunResult, see attempt_result_of) beside the logs.
struct AttemptResult {
  std::string status;     ///< launch::run_status_name: succeeded, failed, stalled, ...
  double started_at = 0;  ///< Unix seconds; 0 when unknown
  double duration_s = 0;
  std::vector<launch::RankEnding> ranks;  ///< the ranks' endings, as the gate judged them
};

nlohmann::json to_json(const AttemptResult& result);
AttemptResult attempt_result_from_json(const nlohmann::json& json);

/// The result.json form of a launch result; `started_at` is the wall time of the launch.
AttemptResult attempt_result_of(const launch::RunResult& result, double started_at);

}  // namespace bigmac::report
