#include "logs/record.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <type_traits>
#include <vector>

#include "logs/contract_names.h"

namespace bigmac::logs {

namespace {

// Record lists the contract's events first, in EventKind order, so a record's index names it.
template <EventKind kEvent, class T>
constexpr bool kAt =
    std::is_same_v<std::variant_alternative_t<static_cast<std::size_t>(kEvent), Record>, T>;
static_assert(kAt<EventKind::kRun, RunRecord> && kAt<EventKind::kPgReady, PgReadyRecord> &&
              kAt<EventKind::kBatch, BatchRecord> && kAt<EventKind::kModel, ModelRecord> &&
              kAt<EventKind::kLayout, LayoutRecord> && kAt<EventKind::kStep, StepRecord> &&
              kAt<EventKind::kHeartbeat, HeartbeatRecord> &&
              kAt<EventKind::kMicroBatch, MicroBatchRecord> &&
              kAt<EventKind::kShape, ShapeRecord> && kAt<EventKind::kLoss, LossRecord> &&
              kAt<EventKind::kCheckpoint, CheckpointRecord> &&
              kAt<EventKind::kDigest, DigestRecord> && kAt<EventKind::kDone, DoneRecord> &&
              kAt<EventKind::kEval, EvalRecord> && kAt<EventKind::kLoad, LoadRecord> &&
              kAt<EventKind::kCollective, CollectiveRecord> &&
              std::variant_size_v<Record> == kEventKindCount + 2);

}  // namespace

const RecordOrigin& origin_of(const Record& record) {
  return std::visit([](const auto& r) -> const RecordOrigin& { return r.at; }, record);
}

std::string_view event_name(const Record& record) {
  if (record.index() < kEventKindCount) return kEventKindNames[record.index()];
  return std::holds_alternative<SettingsRecord>(record) ? "cfg" : "text";
}

std::string CollectiveRecord::describe() const {
  std::string text = fmt::format("{} #{} of {}", op, seq, group.empty() ? "world" : group);
  std::string what = dtype;
  if (!shape.empty()) what += fmt::format("[{}]", fmt::join(shape, ","));
  std::vector<std::string> details;
  for (const std::string& part : {what, by, site}) {
    if (!part.empty()) details.push_back(part);
  }
  if (details.empty()) return text;
  return fmt::format("{} ({})", text, fmt::join(details, ", "));
}

}  // namespace bigmac::logs
