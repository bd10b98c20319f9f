#include "logs/contract_record.h"

namespace bigmac::logs {

namespace {

// Records are built in place at the end of `out`: no temporaries on the hot path. (A
// RecordOrigin returned through the stack and copied in whole cost a store-forwarding stall
// per record: the origin is written field by field where it stays.)
template <class T>
T& start(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  T& record = *std::get_if<T>(&out.emplace_back(std::in_place_type<T>));
  record.at.rank = base.rank;
  record.at.line = base.line;
  record.at.t = base.t;
  bag.read(Key::kRank, record.at.rank);
  bag.read(Key::kT, record.at.t);
  return record;
}

void build_run(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<RunRecord>(bag, base, out);
  bag.read(Key::kWorldSize, r.world_size);
  bag.read(Key::kLocalRank, r.local_rank);
  bag.read(Key::kDevice, r.device);
  bag.read(Key::kBackend, r.backend);
  bag.read(Key::kDtype, r.dtype);
  bag.read(Key::kSeed, r.seed);
  bag.read(Key::kTorchVersion, r.torch_version);
  bag.read(Key::kPid, r.pid);
  bag.read(Key::kToolVersion, r.tool_version);
}

void build_pg_ready(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<PgReadyRecord>(bag, base, out);
  bag.read(Key::kInitMs, r.init_ms);
  bag.read(Key::kWorldSize, r.world_size);
  bag.read(Key::kBackend, r.backend);
}

void build_batch(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<BatchRecord>(bag, base, out);
  bag.read(Key::kMicroBatchSize, r.micro_batch_size);
  bag.read(Key::kGradAccum, r.grad_accum);
  bag.read(Key::kDp, r.dp);
  bag.read(Key::kSamplesPerStep, r.samples_per_step);
  bag.read(Key::kSeqLength, r.seq_length);
  bag.read(Key::kInputShape, r.input_shape);
  bag.read(Key::kInputDtype, r.input_dtype);
}

void build_model(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<ModelRecord>(bag, base, out);
  bag.read(Key::kParamCount, r.param_count);
  bag.read(Key::kParamDigest, r.param_digest);
}

void build_layout(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<LayoutRecord>(bag, base, out);
  bag.read(Key::kStage, r.stage);
  bag.read(Key::kNumStages, r.num_stages);
  bag.read(Key::kFirstLayer, r.first_layer);
  bag.read(Key::kLastLayer, r.last_layer);
  bag.read(Key::kDpRank, r.dp_rank);
  bag.read(Key::kDpSize, r.dp_size);
  bag.read(Key::kParamCount, r.param_count);
  bag.read(Key::kTied, r.tied);
  bag.read(Key::kTiedDuplicateCount, r.tied_duplicate_count);
}

void build_step(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<StepRecord>(bag, base, out);
  bag.require(Key::kGlobalStep);
  bag.read(Key::kGlobalStep, r.global_step);
  bag.read(Key::kLoss, r.loss);
  bag.read(Key::kGradNorm, r.grad_norm);
  bag.read(Key::kLr, r.lr);
  bag.read(Key::kSamplesPerStep, r.samples_per_step);
  bag.read(Key::kStepMs, r.step_ms);
  // The probe's count of backward() calls in the step (docs/probe.md): its evidence of the
  // accumulation the trainer really ran.
  std::optional<std::int64_t> loss_count;
  bag.read(Key::kLossCount, loss_count);
  if (loss_count) r.extra.emplace_back("loss_count", static_cast<double>(*loss_count));
}

void build_heartbeat(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<HeartbeatRecord>(bag, base, out);
  bag.require(Key::kGlobalStep);
  bag.read(Key::kGlobalStep, r.global_step);
  bag.read(Key::kPhase, r.phase);
  if (!r.phase.empty() && r.phase != "start" && r.phase != "end")
    bag.fail("field phase: expected start or end");
}

void build_eval(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<EvalRecord>(bag, base, out);
  bag.read(Key::kGlobalStep, r.global_step);
  bag.require(Key::kPhase);
  bag.read(Key::kPhase, r.phase);
  if (r.phase != "start" && r.phase != "end") bag.fail("field phase: expected start or end");
}

void build_mb(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<MicroBatchRecord>(bag, base, out);
  bag.read(Key::kGlobalStep, r.global_step);
  bag.read(Key::kStage, r.stage);
  bag.read(Key::kMb, r.mb);
  bag.read(Key::kPhase, r.phase);
  if (r.phase != 'F' && r.phase != 'B') bag.fail("field phase: expected F or B");
  bag.read(Key::kStart, r.start);
  bag.read(Key::kEnd, r.end);
}

void build_shape(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<ShapeRecord>(bag, base, out);
  bag.read(Key::kGlobalStep, r.global_step);
  bag.read(Key::kStage, r.stage);
  bag.read(Key::kMb, r.mb);
  bag.read(Key::kWhere, r.where);
  bag.read(Key::kName, r.name);
  bag.read(Key::kShape, r.shape);
  bag.read(Key::kDtype, r.dtype);
  bag.read(Key::kDevice, r.device);
}

void build_loss(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<LossRecord>(bag, base, out);
  bag.read(Key::kGlobalStep, r.global_step);
  bag.read(Key::kStage, r.stage);
  bag.read(Key::kMb, r.mb);
  bag.require(Key::kValue);
  bag.read(Key::kValue, r.value);
}

void build_ckpt(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<CheckpointRecord>(bag, base, out);
  bag.read(Key::kStep, r.step);
  bag.read(Key::kPath, r.path);
}

void build_digest(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<DigestRecord>(bag, base, out);
  bag.read(Key::kParamDigest, r.param_digest);
  bag.read(Key::kGlobalStep, r.global_step);
}

void build_done(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<DoneRecord>(bag, base, out);
  bag.read(Key::kSteps, r.steps);
}

using Builder = void (*)(FieldBag&, const RecordOrigin&, std::vector<Record>&);

struct EventBuilder {
  std::string_view name;
  Builder build;
};

// `step` first: it is the most frequent event after `mb`/`heartbeat`.
constexpr EventBuilder kBuilders[] = {
    {"step", build_step},         {"heartbeat", build_heartbeat}, {"mb", build_mb},
    {"shape", build_shape},       {"loss", build_loss},           {"run", build_run},
    {"pg_ready", build_pg_ready}, {"batch", build_batch},         {"model", build_model},
    {"layout", build_layout},     {"ckpt", build_ckpt},           {"digest", build_digest},
    {"done", build_done},         {"eval", build_eval},
};

}  // namespace

ContractResult build_contract_record(FieldBag& bag, const RecordOrigin& base,
                                     std::vector<Record>& out) {
  const Slot& ev = bag.at(Key::kEv);
  if (ev.kind != Slot::Kind::kString && ev.kind != Slot::Kind::kText) {
    bag.fail(ev.kind == Slot::Kind::kAbsent ? "missing field ev" : "field ev: expected a string");
    return ContractResult::kBad;
  }
  for (const EventBuilder& builder : kBuilders) {
    if (same_short_text(builder.name, ev.s)) {
      builder.build(bag, base, out);
      if (bag.error().empty()) return ContractResult::kRecord;
      out.pop_back();
      return ContractResult::kBad;
    }
  }
  return bag.error().empty() ? ContractResult::kUnknownEvent : ContractResult::kBad;
}

}  // namespace bigmac::logs
