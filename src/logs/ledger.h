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

/// Where some ranks' whole ledgers stop short of the others': a call on one group that some of
/// its members made and the others never reached.
struct LedgerGap {
  CollectiveRecord call;                 ///< the lowest calling rank's entry there
  std::vector<int> callers;              ///< the members that made it, in rank order
  std::vector<int> missing;              ///< the members whose ledger there ends before it
  std::map<int, CollectiveRecord> last;  ///< each missing rank's last entry on that group, if any

  /// "all_reduce #9 of world (float32[1,4], train.py:63), which rank 0 called".
  std::string describe() const;
  /// "broadcast #8 of world (...)", or "no collective on world" for a missing rank.
  std::string last_of(int rank) const;
};

/// The first gap of `ledgers` (rank -> its entries in issue order): per group, the lowest index
/// some members (ranks with a ledger whose group it is) reached and others did not; of several
/// groups, the one whose call there began first. nullopt when every member of every group
/// reached the same index. Read only for a run that ended on an error: a run the tool stopped
/// leaves its ranks wherever the signal found them.
std::optional<LedgerGap> first_gap(const std::map<int, std::vector<CollectiveRecord>>& ledgers);

}  // namespace bigmac::logs
