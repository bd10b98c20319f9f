#include "logs/record.h"

namespace bigmac::logs {

const RecordOrigin& origin_of(const Record& record) {
  return std::visit([](const auto& r) -> const RecordOrigin& { return r.at; }, record);
}

namespace {
struct EventName {
  std::string_view operator()(const RunRecord&) const { return "run"; }
  std::string_view operator()(const PgReadyRecord&) const { return "pg_ready"; }
  std::string_view operator()(const BatchRecord&) const { return "batch"; }
  std::string_view operator()(const ModelRecord&) const { return "model"; }
  std::string_view operator()(const LayoutRecord&) const { return "layout"; }
  std::string_view operator()(const StepRecord&) const { return "step"; }
  std::string_view operator()(const HeartbeatRecord&) const { return "heartbeat"; }
  std::string_view operator()(const MicroBatchRecord&) const { return "mb"; }
  std::string_view operator()(const ShapeRecord&) const { return "shape"; }
  std::string_view operator()(const LossRecord&) const { return "loss"; }
  std::string_view operator()(const CheckpointRecord&) const { return "ckpt"; }
  std::string_view operator()(const DigestRecord&) const { return "digest"; }
  std::string_view operator()(const DoneRecord&) const { return "done"; }
  std::string_view operator()(const EvalRecord&) const { return "eval"; }
  std::string_view operator()(const TextLine&) const { return "text"; }
};
}  // namespace

std::string_view event_name(const Record& record) { return std::visit(EventName{}, record); }

}  // namespace bigmac::logs
