#include "gates/gate_evidence.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "baseline/step_series.h"

namespace bigmac::gates {

void GateEvidence::add_rank(int rank, const std::vector<logs::Record>& records, RankEnding exit) {
  logs::RankLog log;
  log.rank = rank;
  for (const logs::Record& record : records) log.add(record);
  add_rank_log(std::move(log), std::move(exit));
}

void GateEvidence::add_rank_log(logs::RankLog log, RankEnding exit) {
  RankEvidence r;
  static_cast<logs::RankLog&>(r) = std::move(log);
  r.rank = std::max(0, r.rank);
  r.exit = std::move(exit);
  ranks.push_back(std::move(r));
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const RankEvidence& a, const RankEvidence& b) { return a.rank < b.rank; });
}

GateEvidence GateEvidence::from_combined(const std::vector<logs::Record>& records) {
  std::map<int, std::vector<logs::Record>> by_rank;
  for (const logs::Record& record : records) {
    by_rank[std::max(0, logs::origin_of(record).rank)].push_back(record);
  }
  GateEvidence out;
  for (const auto& [rank, list] : by_rank) out.add_rank(rank, list, RankEnding{});
  return out;
}

std::vector<logs::Record> GateEvidence::all_records() const {
  std::vector<logs::Record> out;
  for (const RankEvidence& r : ranks) {
    for (const auto& x : r.runs) out.emplace_back(x);
    for (const auto& x : r.batches) out.emplace_back(x);
    for (const auto& x : r.models) out.emplace_back(x);
    for (const auto& x : r.steps) out.emplace_back(x);
    for (const auto& x : r.layouts) out.emplace_back(x);
    // Each step's sample set, the trainer's (`digest`) or the probe's (`step`) alike.
    for (const logs::RankLog::StepDigests& d : r.step_digests) {
      if (d.sample_count && d.sample_digest) {
        out.emplace_back(logs::DigestRecord{
            d.at, {}, d.step, {}, {}, d.sample_count, d.sample_digest, d.sample_hashes});
      }
    }
  }
  return out;
}

const RankEvidence* GateEvidence::owner() const {
  return baseline::series_owner(std::span<const RankEvidence>(ranks), loss_rank);
}

}  // namespace bigmac::gates
