#include "logs/ledger.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace bigmac::logs {

bool member_of(std::string_view group, int rank) {
  if (group.empty() || group == "world") return true;
  const std::string me = std::to_string(rank);
  if (const std::size_t arrow = group.find("->"); arrow != std::string_view::npos) {
    return group.substr(0, arrow) == me || group.substr(arrow + 2) == me;
  }
  std::size_t start = 0;
  while (start < group.size()) {
    const std::size_t end = std::min(group.find(',', start), group.size());
    if (group.substr(start, end - start) == me) return true;
    start = end + 1;
  }
  return false;
}

void RankLedger::add(const CollectiveRecord& c) {
  current = c;
  last_on[c.group] = c;
  std::deque<CollectiveRecord>& kept = recent[c.group];
  kept.push_back(c);
  if (kept.size() > kRecent) kept.pop_front();
}

std::vector<CollectiveRecord> RankLedger::recent_entries() const {
  std::vector<CollectiveRecord> out;
  for (const auto& [group, kept] : recent) out.insert(out.end(), kept.begin(), kept.end());
  return out;
}

std::string LedgerSplit::describe() const {
  std::vector<std::string> parts;
  for (const CollectiveRecord& c : calls) {
    std::string what = c.dtype;
    if (!c.shape.empty()) what += fmt::format("[{}]", fmt::join(c.shape, ","));
    std::vector<std::string> details;
    if (!what.empty()) details.push_back(what);
    if (!c.site.empty()) details.push_back(c.site);
    parts.push_back(
        fmt::format("rank {} called {}{}", c.at.rank, c.op,
                    details.empty() ? "" : fmt::format(" ({})", fmt::join(details, ", "))));
  }
  const std::string op = calls.empty() ? std::string("collective") : calls.front().op;
  return fmt::format("{} #{} of {}: {}", different_ops ? "collective" : op, seq, group,
                     fmt::join(parts, "; "));
}

namespace {

// The split at one index of one group, when the calls there disagree.
std::optional<LedgerSplit> split_at(const std::string& group, std::int64_t seq,
                                    std::vector<CollectiveRecord> calls) {
  if (calls.size() < 2) return std::nullopt;
  std::vector<std::pair<const CollectiveRecord*, int>> kinds;  // a call and how many made it
  for (const CollectiveRecord& c : calls) {
    auto same = std::find_if(kinds.begin(), kinds.end(),
                             [&](const auto& k) { return k.first->same_call(c); });
    if (same == kinds.end()) {
      kinds.emplace_back(&c, 1);
    } else {
      ++same->second;
    }
  }
  if (kinds.size() < 2) return std::nullopt;
  LedgerSplit split;
  split.group = group;
  split.seq = seq;
  const auto most = std::max_element(
      kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  const bool tie = std::count_if(kinds.begin(), kinds.end(),
                                 [&](const auto& k) { return k.second == most->second; }) > 1;
  for (const CollectiveRecord& c : calls) {
    if (tie || !most->first->same_call(c)) split.odd.push_back(c.at.rank);
    if (!c.p2p() && c.op != calls.front().op) split.different_ops = true;
  }
  split.calls = std::move(calls);
  return split;
}

}  // namespace

std::optional<LedgerSplit> first_split(
    const std::map<int, std::vector<CollectiveRecord>>& ledgers) {
  // group -> seq -> the calls there, by rank (a map of ranks keeps them in rank order)
  std::map<std::string, std::map<std::int64_t, std::map<int, const CollectiveRecord*>>> at;
  for (const auto& [rank, entries] : ledgers) {
    for (const CollectiveRecord& c : entries) at[c.group][c.seq].emplace(rank, &c);
  }
  std::optional<LedgerSplit> first;
  double first_t = std::numeric_limits<double>::infinity();
  for (const auto& [group, by_seq] : at) {
    for (const auto& [seq, by_rank] : by_seq) {
      std::vector<CollectiveRecord> calls;
      double t = std::numeric_limits<double>::infinity();
      for (const auto& [rank, c] : by_rank) {
        calls.push_back(*c);
        calls.back().at.rank = rank;
        if (c->at.t > 0) t = std::min(t, c->at.t);
      }
      auto split = split_at(group, seq, std::move(calls));
      if (!split) continue;
      if (!first || t < first_t) {
        first = std::move(split);
        first_t = t;
      }
      break;  // this group's first split; later ones follow from it
    }
  }
  return first;
}

std::string LedgerGap::describe() const {
  return fmt::format("{}, which {} {} called", call.describe(),
                     callers.size() == 1 ? "rank" : "ranks", fmt::join(callers, ", "));
}

std::string LedgerGap::last_of(int rank) const {
  const auto it = last.find(rank);
  return it == last.end() ? "no collective on " + call.group : it->second.describe();
}

std::optional<LedgerGap> first_gap(const std::map<int, std::vector<CollectiveRecord>>& ledgers) {
  // group -> rank -> its entries there, in issue order
  std::map<std::string, std::map<int, std::vector<const CollectiveRecord*>>> on;
  for (const auto& [rank, entries] : ledgers) {
    for (const CollectiveRecord& c : entries) on[c.group][rank].push_back(&c);
  }
  std::optional<LedgerGap> first;
  double first_t = std::numeric_limits<double>::infinity();
  for (const auto& [group, by_rank] : on) {
    // A member that never called on the group has no entry there: it reached index 0.
    std::map<int, std::int64_t> reached;  // rank -> entries it made on the group
    for (const auto& [rank, _] : ledgers) {
      if (!member_of(group, rank)) continue;
      const auto it = by_rank.find(rank);
      reached[rank] = it == by_rank.end() ? 0 : it->second.back()->seq + 1;
    }
    if (reached.size() < 2) continue;
    std::int64_t low = std::numeric_limits<std::int64_t>::max();
    for (const auto& [rank, n] : reached) low = std::min(low, n);
    LedgerGap gap;
    double t = std::numeric_limits<double>::infinity();
    for (const auto& [rank, n] : reached) {
      if (n == low) {
        gap.missing.push_back(rank);
        if (n > 0) gap.last.emplace(rank, *by_rank.at(rank).back());
        continue;
      }
      for (const CollectiveRecord* c : by_rank.at(rank)) {
        if (c->seq != low) continue;
        if (gap.callers.empty()) gap.call = *c;
        if (c->at.t > 0) t = std::min(t, c->at.t);
        break;
      }
      gap.callers.push_back(rank);
    }
    if (gap.callers.empty()) continue;  // every member reached the same index
    if (!first || t < first_t) {
      first = std::move(gap);
      first_t = t;
    }
  }
  return first;
}

}  // namespace bigmac::logs
