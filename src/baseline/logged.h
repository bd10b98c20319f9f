#pragma once

#include "logs/rank_log.h"

namespace bigmac::baseline {

/// A record and the rank log it came from, as the shared judgements return them: the gates cite
/// the record, the diagnosis also the log's file (logs::RankLog::label).
template <class R>
struct Logged {
  const R* record = nullptr;
  const logs::RankLog* log = nullptr;
};

}  // namespace bigmac::baseline
