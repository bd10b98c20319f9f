#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "logs/rank_log.h"
#include "logs/record.h"

namespace bigmac::report {

/// What the reports show of an attempt's logs, taken once when the attempt ends (from the
/// records parsed live) and kept as `records.json` beside its verdict, so that reports never
/// parse the logs again.
struct AttemptRecords {
  int ranks_logged = 0;                               ///< ranks with any line
  double first_t = 0, last_t = 0;                     ///< wall-time range of the logs (0: none)
  std::vector<logs::StepRecord> steps;                ///< the owner's steps
  std::vector<logs::MicroBatchRecord> micro_batches;  ///< every rank's `mb` events, by start
  /// The owner's field -> where its values came from, when the probe ran
  /// (logs::RankLog::field_sources); empty otherwise.
  std::map<std::string, std::string> field_sources;
};

/// The summary of one attempt's ranks (in rank order): the first rank that logged steps owns
/// the loss, as the gate checks read it.
AttemptRecords attempt_records_of(std::span<const logs::RankLog> ranks);

/// The file name inside an attempt folder.
inline constexpr const char* kAttemptRecordsName = "records.json";

nlohmann::json to_json(const AttemptRecords& records);
AttemptRecords attempt_records_from_json(const nlohmann::json& json);

}  // namespace bigmac::report
