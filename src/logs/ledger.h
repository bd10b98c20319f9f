#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "logs/record.h"

namespace bigmac::logs {

/// "world", a group's global ranks ("0,2"), or a point-to-point channel from sender to
/// receiver ("0->1"): whether `rank` takes part in calls on `group`.
bool member_of(std::string_view group, int rank);

/// One rank's collective ledger (the probe's `coll` events) as far as it got: its last entry
/// on each group and its last entry of all, the call it is in or last went through.
struct RankLedger {
  static constexpr std::size_t kRecent = 64;  ///< entries kept per group
  CollectiveRecord current;
  std::map<std::string, CollectiveRecord> last_on;             ///< group -> its last entry there
  std::map<std::string, std::deque<CollectiveRecord>> recent;  ///< group -> its last kRecent
  /// Takes `c` as this rank's latest entry.
  void add(const CollectiveRecord& c);
  /// The recent entries of every group, for first_split.
  std::vector<CollectiveRecord> recent_entries() const;
};

/// Where the ranks' whole ledgers first part: at one index of one group, the ranks that got
/// there made different calls (another collective, or the same with another shape or dtype).
struct LedgerSplit {
  std::string group;
  std::int64_t seq = 0;
  std::vector<CollectiveRecord> calls;  ///< each rank's call there, by rank
  /// The ranks whose call differs from the one most ranks made; every rank of `calls` when no
  /// call has a majority (two ranks, two calls).
  std::vector<int> odd;
  bool different_ops = false;  ///< different collectives; else the same one, other shapes

  /// "all_reduce #6 of world: rank 0 called all_reduce (float32[1,4], train.py:42); rank 1
  /// called all_reduce (float32[145], train.py:50)".
  std::string describe() const;
};

/// The first split of `ledgers` (rank -> its entries in issue order): per group, the lowest
/// index at which two ranks' entries disagree; of several groups, the one whose calls there
/// began first. nullopt when every index that two ranks reached agrees.
std::optional<LedgerSplit> first_split(const std::map<int, std::vector<CollectiveRecord>>& ledgers);

}  // namespace bigmac::logs
