#include "logs/contract_record.h"

#include <iterator>

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
  bag.read(FieldKey::kRank, record.at.rank);
  bag.read(FieldKey::kT, record.at.t);
  return record;
}

// A digest as 64 bits: the first 16 hex digits as they are, other text hashed (FNV-1a), so
// that equal digests compare equal whoever wrote them.
void read_digest(FieldBag& bag, FieldKey key, std::optional<std::uint64_t>& out) {
  if (!bag.has(key)) return;
  std::string text;
  bag.read(key, text);
  if (text.empty()) return;
  std::uint64_t value = 0;
  bool hex = text.size() <= 16;
  for (char c : text) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) {
      hex = false;
      break;
    }
    value = value * 16 + static_cast<std::uint64_t>(d);
  }
  if (!hex) {
    value = 1469598103934665603ULL;
    for (unsigned char c : text) value = (value ^ c) * 1099511628211ULL;
  }
  out = value;
}

// `sample_hashes`: 16 hex digits a sample. A list of another shape is not a list of hashes:
// left empty (the samples read twice are then unobservable), never half read.
void read_hashes(FieldBag& bag, FieldKey key, std::vector<std::uint64_t>& out) {
  if (!bag.has(key)) return;
  std::string text;
  bag.read(key, text);
  if (text.size() % 16 != 0) return;
  out.reserve(text.size() / 16);
  for (std::size_t i = 0; i < text.size(); i += 16) {
    std::uint64_t value = 0;
    for (std::size_t j = i; j < i + 16; ++j) {
      const char c = text[j];
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) {
        out.clear();
        return;
      }
      value = value * 16 + static_cast<std::uint64_t>(d);
    }
    out.push_back(value);
  }
}

void build_run(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<RunRecord>(bag, base, out);
  bag.read(FieldKey::kWorldSize, r.world_size);
  bag.read(FieldKey::kLocalRank, r.local_rank);
  bag.read(FieldKey::kDevice, r.device);
  bag.read(FieldKey::kBackend, r.backend);
  bag.read(FieldKey::kDtype, r.dtype);
  bag.read(FieldKey::kSeed, r.seed);
  bag.read(FieldKey::kTorchVersion, r.torch_version);
  bag.read(FieldKey::kPythonVersion, r.python_version);
  bag.read(FieldKey::kPid, r.pid);
  bag.read(FieldKey::kToolVersion, r.tool_version);
  bag.read(FieldKey::kBound, r.bound);
  bag.read(FieldKey::kSpawnedNprocs, r.spawned_nprocs);
  bag.read(FieldKey::kSpawnInPlace, r.spawn_in_place);
  bag.read(FieldKey::kStacksSignal, r.stacks_signal);
  bag.read(FieldKey::kStacksPath, r.stacks_path);
  bag.read(FieldKey::kStacksUnavailable, r.stacks_unavailable);
  bag.read(FieldKey::kMainThread, r.main_thread);
  bag.read(FieldKey::kHost, r.host);
  bag.read(FieldKey::kLibraryDirs, r.library_dirs);
}

void build_pg_ready(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<PgReadyRecord>(bag, base, out);
  bag.read(FieldKey::kInitMs, r.init_ms);
  bag.read(FieldKey::kWorldSize, r.world_size);
  bag.read(FieldKey::kBackend, r.backend);
}

void build_batch(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<BatchRecord>(bag, base, out);
  bag.read(FieldKey::kMicroBatchSize, r.micro_batch_size);
  bag.read(FieldKey::kGradAccum, r.grad_accum);
  bag.read(FieldKey::kDp, r.dp);
  bag.read(FieldKey::kSamplesPerStep, r.samples_per_step);
  bag.read(FieldKey::kSeqLength, r.seq_length);
  bag.read(FieldKey::kInputShape, r.input_shape);
  bag.read(FieldKey::kInputDtype, r.input_dtype);
}

void build_model(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<ModelRecord>(bag, base, out);
  bag.read(FieldKey::kParamCount, r.param_count);
  bag.read(FieldKey::kParamDigest, r.param_digest);
  bag.read(FieldKey::kSeed, r.seed);
  bag.read(FieldKey::kSeedNote, r.seed_note);
}

void build_layout(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<LayoutRecord>(bag, base, out);
  bag.read(FieldKey::kStage, r.stage);
  bag.read(FieldKey::kNumStages, r.num_stages);
  bag.read(FieldKey::kFirstLayer, r.first_layer);
  bag.read(FieldKey::kLastLayer, r.last_layer);
  bag.read(FieldKey::kDpRank, r.dp_rank);
  bag.read(FieldKey::kDpSize, r.dp_size);
  bag.read(FieldKey::kParamCount, r.param_count);
  bag.read(FieldKey::kTied, r.tied);
  bag.read(FieldKey::kTiedDuplicateCount, r.tied_duplicate_count);
  bag.read(FieldKey::kLayersUnknown, r.layers_unknown);
  bag.read(FieldKey::kSchedule, r.schedule);
  bag.read(FieldKey::kPrevRank, r.prev_rank);
  bag.read(FieldKey::kNextRank, r.next_rank);
}

void build_step(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<StepRecord>(bag, base, out);
  bag.require(FieldKey::kGlobalStep);
  bag.read(FieldKey::kGlobalStep, r.global_step);
  bag.read(FieldKey::kLoss, r.loss);
  bag.read(FieldKey::kGradNorm, r.grad_norm);
  bag.read(FieldKey::kGradNormPreclip, r.grad_norm_preclip);
  bag.read(FieldKey::kLr, r.lr);
  bag.read(FieldKey::kSamplesPerStep, r.samples_per_step);
  bag.read(FieldKey::kStepMs, r.step_ms);
  read_digest(bag, FieldKey::kInputDigest, r.input_digest);
  read_digest(bag, FieldKey::kParamDigest, r.param_digest);
  bag.read(FieldKey::kSampleCount, r.sample_count);
  read_digest(bag, FieldKey::kSampleDigest, r.sample_digest);
  read_hashes(bag, FieldKey::kSampleHashes, r.sample_hashes);
  read_digest(bag, FieldKey::kBufferDigest, r.buffer_digest);
  // The probe's count of backward() calls in the step (docs/probe.md): its evidence of the
  // accumulation the trainer really ran.
  std::optional<std::int64_t> loss_count;
  bag.read(FieldKey::kLossCount, loss_count);
  if (loss_count) r.extra.emplace_back("loss_count", static_cast<double>(*loss_count));
  // A pipeline stage's squared norm (the probe's): the stages' sum is the model's
  // (logs::combine_stage_values).
  std::optional<double> grad_norm_sq;
  bag.read(FieldKey::kGradNormSq, grad_norm_sq);
  if (grad_norm_sq) r.extra.emplace_back("grad_norm_sq", *grad_norm_sq);
}

void build_heartbeat(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<HeartbeatRecord>(bag, base, out);
  bag.require(FieldKey::kGlobalStep);
  bag.read(FieldKey::kGlobalStep, r.global_step);
  bag.read(FieldKey::kPhase, r.phase);
  if (!r.phase.empty() && r.phase != "start" && r.phase != "end")
    bag.fail("field phase: expected start or end");
}

void build_eval(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<EvalRecord>(bag, base, out);
  bag.read(FieldKey::kGlobalStep, r.global_step);
  bag.require(FieldKey::kPhase);
  bag.read(FieldKey::kPhase, r.phase);
  if (r.phase != "start" && r.phase != "end") bag.fail("field phase: expected start or end");
}

void build_mb(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<MicroBatchRecord>(bag, base, out);
  bag.read(FieldKey::kGlobalStep, r.global_step);
  bag.read(FieldKey::kStage, r.stage);
  bag.read(FieldKey::kMb, r.mb);
  bag.read(FieldKey::kPhase, r.phase);
  if (r.phase != 'F' && r.phase != 'B') bag.fail("field phase: expected F or B");
  bag.read(FieldKey::kStart, r.start);
  bag.read(FieldKey::kEnd, r.end);
}

void build_shape(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<ShapeRecord>(bag, base, out);
  bag.read(FieldKey::kGlobalStep, r.global_step);
  bag.read(FieldKey::kStage, r.stage);
  bag.read(FieldKey::kMb, r.mb);
  bag.read(FieldKey::kWhere, r.where);
  bag.read(FieldKey::kName, r.name);
  bag.read(FieldKey::kShape, r.shape);
  bag.read(FieldKey::kDtype, r.dtype);
  bag.read(FieldKey::kDevice, r.device);
  bag.read(FieldKey::kPeer, r.peer);
}

void build_loss(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<LossRecord>(bag, base, out);
  bag.read(FieldKey::kGlobalStep, r.global_step);
  bag.read(FieldKey::kStage, r.stage);
  bag.read(FieldKey::kMb, r.mb);
  bag.require(FieldKey::kValue);
  bag.read(FieldKey::kValue, r.value);
}

void build_ckpt(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<CheckpointRecord>(bag, base, out);
  bag.read(FieldKey::kStep, r.step);
  bag.read(FieldKey::kPath, r.path);
}

void build_digest(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<DigestRecord>(bag, base, out);
  bag.read(FieldKey::kParamDigest, r.param_digest);
  bag.read(FieldKey::kGlobalStep, r.global_step);
  read_digest(bag, FieldKey::kParamDigest, r.params);
  read_digest(bag, FieldKey::kInputDigest, r.input_digest);
  bag.read(FieldKey::kSampleCount, r.sample_count);
  read_digest(bag, FieldKey::kSampleDigest, r.sample_digest);
  read_hashes(bag, FieldKey::kSampleHashes, r.sample_hashes);
  read_digest(bag, FieldKey::kBufferDigest, r.buffer_digest);
}

void build_done(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<DoneRecord>(bag, base, out);
  bag.read(FieldKey::kSteps, r.steps);
  bag.read(FieldKey::kBounded, r.bounded);
}

void build_load(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<LoadRecord>(bag, base, out);
  bag.read(FieldKey::kPath, r.path);
  bag.read(FieldKey::kGlobalStep, r.global_step);
}

void build_collective(FieldBag& bag, const RecordOrigin& base, std::vector<Record>& out) {
  auto& r = start<CollectiveRecord>(bag, base, out);
  bag.read(FieldKey::kGroup, r.group);
  bag.read(FieldKey::kSeq, r.seq);
  bag.read(FieldKey::kOp, r.op);
  bag.read(FieldKey::kShape, r.shape);
  bag.read(FieldKey::kDtype, r.dtype);
  bag.read(FieldKey::kSite, r.site);
  bag.read(FieldKey::kFn, r.function);
  bag.read(FieldKey::kBy, r.by);
  bag.read(FieldKey::kGlobalStep, r.global_step);
}

using Builder = void (*)(FieldBag&, const RecordOrigin&, std::vector<Record>&);

struct EventBuilder {
  EventKind event;
  Builder build;
};

// `step` first: it is the most frequent event after `mb`/`heartbeat`.
constexpr EventBuilder kBuilders[] = {
    {EventKind::kStep, build_step},        {EventKind::kHeartbeat, build_heartbeat},
    {EventKind::kMicroBatch, build_mb},    {EventKind::kShape, build_shape},
    {EventKind::kLoss, build_loss},        {EventKind::kRun, build_run},
    {EventKind::kPgReady, build_pg_ready}, {EventKind::kBatch, build_batch},
    {EventKind::kModel, build_model},      {EventKind::kLayout, build_layout},
    {EventKind::kCheckpoint, build_ckpt},  {EventKind::kDigest, build_digest},
    {EventKind::kDone, build_done},        {EventKind::kEval, build_eval},
    {EventKind::kLoad, build_load},        {EventKind::kCollective, build_collective},
};
static_assert(std::size(kBuilders) == kEventKindCount, "one builder per contract event");

}  // namespace

ContractResult build_contract_record(FieldBag& bag, const RecordOrigin& base,
                                     std::vector<Record>& out) {
  const Slot& ev = bag.at(FieldKey::kEv);
  if (ev.kind != Slot::Kind::kString && ev.kind != Slot::Kind::kText) {
    bag.fail(ev.kind == Slot::Kind::kAbsent ? "missing field ev" : "field ev: expected a string");
    return ContractResult::kBad;
  }
  for (const EventBuilder& builder : kBuilders) {
    if (same_short_text(event_kind_name(builder.event), ev.s)) {
      builder.build(bag, base, out);
      if (bag.error().empty()) return ContractResult::kRecord;
      out.pop_back();
      return ContractResult::kBad;
    }
  }
  return bag.error().empty() ? ContractResult::kUnknownEvent : ContractResult::kBad;
}

}  // namespace bigmac::logs
