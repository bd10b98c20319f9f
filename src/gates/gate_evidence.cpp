#include "gates/gate_evidence.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace bigmac::gates {

std::string RankExit::describe() const {
  if (!known) return "exit unknown";
  if (stalled) return detail.empty() ? "stalled" : "stalled (" + detail + ")";
  if (!signal.empty()) return "killed by " + signal;
  if (exit_code) return fmt::format("exit {}", *exit_code);
  return "still running";
}

void RankEvidence::add(const logs::Record& record) {
  std::visit(
      [this](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, logs::RunRecord>)
          runs.push_back(r);
        else if constexpr (std::is_same_v<T, logs::PgReadyRecord>)
          pg_ready.push_back(r);
        else if constexpr (std::is_same_v<T, logs::BatchRecord>)
          batches.push_back(r);
        else if constexpr (std::is_same_v<T, logs::ModelRecord>)
          models.push_back(r);
        else if constexpr (std::is_same_v<T, logs::LayoutRecord>)
          layouts.push_back(r);
        else if constexpr (std::is_same_v<T, logs::StepRecord>)
          steps.push_back(r);
        else if constexpr (std::is_same_v<T, logs::HeartbeatRecord>)
          heartbeats.push_back(r);
        else if constexpr (std::is_same_v<T, logs::MicroBatchRecord>)
          micro_batches.push_back(r);
        else if constexpr (std::is_same_v<T, logs::ShapeRecord>)
          shapes.push_back(r);
        else if constexpr (std::is_same_v<T, logs::LossRecord>)
          losses.push_back(r);
        else if constexpr (std::is_same_v<T, logs::CheckpointRecord>)
          checkpoints.push_back(r);
        else if constexpr (std::is_same_v<T, logs::DigestRecord>)
          digests.push_back(r);
        else if constexpr (std::is_same_v<T, logs::DoneRecord>)
          dones.push_back(r);
        else
          text.push_back(r);
      },
      record);
}

void GateEvidence::add_rank(int rank, const std::vector<logs::Record>& records, RankExit exit) {
  RankEvidence r;
  r.rank = rank;
  r.exit = std::move(exit);
  for (const logs::Record& record : records) r.add(record);
  ranks.push_back(std::move(r));
  std::stable_sort(ranks.begin(), ranks.end(),
                   [](const RankEvidence& a, const RankEvidence& b) { return a.rank < b.rank; });
}

void GateEvidence::add_rank_log(const logs::RankLog& log, RankExit exit) {
  std::vector<logs::Record> records;
  auto once = [&](const auto& optional) {
    if (optional) records.emplace_back(*optional);
  };
  once(log.run);
  once(log.pg_ready);
  once(log.batch);
  once(log.model);
  once(log.layout);
  records.insert(records.end(), log.steps.begin(), log.steps.end());
  records.insert(records.end(), log.heartbeats.begin(), log.heartbeats.end());
  records.insert(records.end(), log.micro_batches.begin(), log.micro_batches.end());
  records.insert(records.end(), log.shapes.begin(), log.shapes.end());
  records.insert(records.end(), log.losses.begin(), log.losses.end());
  records.insert(records.end(), log.checkpoints.begin(), log.checkpoints.end());
  once(log.digest);
  once(log.done);
  for (const logs::TextLine& line : log.context.lines()) records.emplace_back(line);
  add_rank(std::max(0, log.rank), records, std::move(exit));
}

GateEvidence GateEvidence::from_combined(const std::vector<logs::Record>& records) {
  std::map<int, std::vector<logs::Record>> by_rank;
  for (const logs::Record& record : records) {
    by_rank[std::max(0, logs::origin_of(record).rank)].push_back(record);
  }
  GateEvidence out;
  for (const auto& [rank, list] : by_rank) out.add_rank(rank, list, RankExit{});
  return out;
}

std::vector<logs::Record> GateEvidence::all_records() const {
  std::vector<logs::Record> out;
  for (const RankEvidence& r : ranks) {
    for (const auto& x : r.runs) out.emplace_back(x);
    for (const auto& x : r.batches) out.emplace_back(x);
    for (const auto& x : r.models) out.emplace_back(x);
    for (const auto& x : r.steps) out.emplace_back(x);
  }
  return out;
}

const RankEvidence* GateEvidence::step_owner() const {
  for (const RankEvidence& r : ranks) {
    if (!r.steps.empty()) return &r;
  }
  return nullptr;
}

}  // namespace bigmac::gates
