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
  /// Interrupted (Ctrl-C): where each rank was when the run stopped, its stack and its place in
  /// the collective ledger ("rank 1: main thread at data.py:40 in load_batch; last collective
  /// ..."), so the hang the user stopped is on record, not only on the terminal.
  std::vector<std::string> interrupted_at{};
};

nlohmann::json to_json(const AttemptResult& result);
AttemptResult attempt_result_from_json(const nlohmann::json& json);

/// The result.json form of a launch result; `started_at` is the wall time of the launch.
AttemptResult attempt_result_of(const launch::RunResult& result, double started_at);

}  // namespace bigmac::report
