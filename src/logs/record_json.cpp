#include "logs/record_json.h"

#include <fmt/format.h>

#include <cmath>
#include <iterator>
#include <nlohmann/json.hpp>
#include <utility>

#include "logs/contract_names.h"

namespace bigmac::logs {

namespace {

using Json = nlohmann::ordered_json;

Json number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

// `sample_hashes` as the probe writes it: 16 hex digits a sample.
std::string hex_list(const std::vector<std::uint64_t>& values) {
  std::string out;
  out.reserve(values.size() * 16);
  for (const std::uint64_t v : values) fmt::format_to(std::back_inserter(out), "{:016x}", v);
  return out;
}

// Writes fields under their contract names.
class Fields {
 public:
  explicit Fields(Json& doc) : doc_(doc) {}
  template <class T>
  void operator()(FieldKey key, const T& value) {
    doc_[std::string(key_name(key))] = value;
  }
  void operator()(FieldKey key, double value) { doc_[std::string(key_name(key))] = number(value); }
  template <class T>
  void operator()(FieldKey key, const std::optional<T>& value) {
    if (value) (*this)(key, *value);
  }
  void operator()(FieldKey key, char value) {
    doc_[std::string(key_name(key))] = std::string(1, value);
  }

 private:
  Json& doc_;
};

struct Writer {
  Json& doc;
  Fields put{doc};

  void operator()(const RunRecord& r) {
    put(FieldKey::kWorldSize, r.world_size);
    put(FieldKey::kLocalRank, r.local_rank);
    put(FieldKey::kDevice, r.device);
    put(FieldKey::kBackend, r.backend);
    put(FieldKey::kDtype, r.dtype);
    put(FieldKey::kSeed, r.seed);
    put(FieldKey::kTorchVersion, r.torch_version);
    put(FieldKey::kPid, r.pid);
    put(FieldKey::kToolVersion, r.tool_version);
    put(FieldKey::kBound, r.bound);
    put(FieldKey::kSpawnedNprocs, r.spawned_nprocs);
    put(FieldKey::kSpawnInPlace, r.spawn_in_place);
    put(FieldKey::kStacksSignal, r.stacks_signal);
    const std::pair<FieldKey, const std::string*> stacks[] = {
        {FieldKey::kStacksPath, &r.stacks_path},
        {FieldKey::kStacksUnavailable, &r.stacks_unavailable},
        {FieldKey::kMainThread, &r.main_thread},
        {FieldKey::kHost, &r.host},
        {FieldKey::kLibraryDirs, &r.library_dirs}};
    for (const auto& [key, value] : stacks) {
      if (!value->empty()) put(key, *value);
    }
  }
  void operator()(const PgReadyRecord& r) {
    put(FieldKey::kInitMs, r.init_ms);
    put(FieldKey::kWorldSize, r.world_size);
    put(FieldKey::kBackend, r.backend);
  }
  void operator()(const BatchRecord& r) {
    put(FieldKey::kMicroBatchSize, r.micro_batch_size);
    put(FieldKey::kGradAccum, r.grad_accum);
    put(FieldKey::kDp, r.dp);
    put(FieldKey::kSamplesPerStep, r.samples_per_step);
    put(FieldKey::kSeqLength, r.seq_length);
    put(FieldKey::kInputShape, r.input_shape);
    put(FieldKey::kInputDtype, r.input_dtype);
  }
  void operator()(const ModelRecord& r) {
    put(FieldKey::kParamCount, r.param_count);
    put(FieldKey::kParamDigest, r.param_digest);
    put(FieldKey::kSeed, r.seed);
    if (!r.seed_note.empty()) put(FieldKey::kSeedNote, r.seed_note);
  }
  void operator()(const LayoutRecord& r) {
    put(FieldKey::kStage, r.stage);
    put(FieldKey::kNumStages, r.num_stages);
    put(FieldKey::kFirstLayer, r.first_layer);
    put(FieldKey::kLastLayer, r.last_layer);
    put(FieldKey::kDpRank, r.dp_rank);
    put(FieldKey::kDpSize, r.dp_size);
    put(FieldKey::kParamCount, r.param_count);
    put(FieldKey::kTied, r.tied);
    put(FieldKey::kTiedDuplicateCount, r.tied_duplicate_count);
    if (!r.layers_unknown.empty()) put(FieldKey::kLayersUnknown, r.layers_unknown);
    if (!r.schedule.empty()) put(FieldKey::kSchedule, r.schedule);
    if (r.prev_rank >= 0) put(FieldKey::kPrevRank, r.prev_rank);
    if (r.next_rank >= 0) put(FieldKey::kNextRank, r.next_rank);
  }
  void operator()(const StepRecord& r) {
    put(FieldKey::kGlobalStep, r.global_step);
    put(FieldKey::kLoss, r.loss);
    put(FieldKey::kGradNorm, r.grad_norm);
    put(FieldKey::kGradNormPreclip, r.grad_norm_preclip);
    put(FieldKey::kLr, r.lr);
    put(FieldKey::kSamplesPerStep, r.samples_per_step);
    put(FieldKey::kStepMs, r.step_ms);
    if (r.input_digest) put(FieldKey::kInputDigest, fmt::format("{:016x}", *r.input_digest));
    if (r.param_digest) put(FieldKey::kParamDigest, fmt::format("{:016x}", *r.param_digest));
    if (r.sample_count) put(FieldKey::kSampleCount, *r.sample_count);
    if (r.sample_digest) put(FieldKey::kSampleDigest, fmt::format("{:016x}", *r.sample_digest));
    if (!r.sample_hashes.empty()) put(FieldKey::kSampleHashes, hex_list(r.sample_hashes));
    if (r.buffer_digest) put(FieldKey::kBufferDigest, fmt::format("{:016x}", *r.buffer_digest));
    if (r.extra.empty()) return;
    Json& extra = doc["extra"];
    for (const auto& [name, value] : r.extra) extra[name] = number(value);
  }
  void operator()(const HeartbeatRecord& r) {
    put(FieldKey::kGlobalStep, r.global_step);
    if (!r.phase.empty()) put(FieldKey::kPhase, r.phase);
  }
  void operator()(const MicroBatchRecord& r) {
    put(FieldKey::kGlobalStep, r.global_step);
    put(FieldKey::kStage, r.stage);
    put(FieldKey::kMb, r.mb);
    put(FieldKey::kPhase, r.phase);
    put(FieldKey::kStart, r.start);
    put(FieldKey::kEnd, r.end);
  }
  void operator()(const ShapeRecord& r) {
    put(FieldKey::kGlobalStep, r.global_step);
    put(FieldKey::kStage, r.stage);
    put(FieldKey::kMb, r.mb);
    put(FieldKey::kWhere, r.where);
    put(FieldKey::kName, r.name);
    put(FieldKey::kShape, r.shape);
    put(FieldKey::kDtype, r.dtype);
    put(FieldKey::kDevice, r.device);
    if (r.peer >= 0) put(FieldKey::kPeer, r.peer);
  }
  void operator()(const LossRecord& r) {
    put(FieldKey::kGlobalStep, r.global_step);
    put(FieldKey::kStage, r.stage);
    put(FieldKey::kMb, r.mb);
    put(FieldKey::kValue, r.value);
  }
  void operator()(const CheckpointRecord& r) {
    put(FieldKey::kStep, r.step);
    put(FieldKey::kPath, r.path);
  }
  void operator()(const DigestRecord& r) {
    if (!r.param_digest.empty()) put(FieldKey::kParamDigest, r.param_digest);
    put(FieldKey::kGlobalStep, r.global_step);
    if (r.input_digest) put(FieldKey::kInputDigest, fmt::format("{:016x}", *r.input_digest));
    if (r.sample_count) put(FieldKey::kSampleCount, *r.sample_count);
    if (r.sample_digest) put(FieldKey::kSampleDigest, fmt::format("{:016x}", *r.sample_digest));
    if (!r.sample_hashes.empty()) put(FieldKey::kSampleHashes, hex_list(r.sample_hashes));
    if (r.buffer_digest) put(FieldKey::kBufferDigest, fmt::format("{:016x}", *r.buffer_digest));
  }
  void operator()(const DoneRecord& r) {
    put(FieldKey::kSteps, r.steps);
    if (r.bounded) put(FieldKey::kBounded, true);
  }
  void operator()(const LoadRecord& r) {
    put(FieldKey::kPath, r.path);
    put(FieldKey::kGlobalStep, r.global_step);
  }
  void operator()(const CollectiveRecord& r) {
    put(FieldKey::kGroup, r.group);
    put(FieldKey::kSeq, r.seq);
    put(FieldKey::kOp, r.op);
    if (!r.shape.empty()) put(FieldKey::kShape, r.shape);
    if (!r.dtype.empty()) put(FieldKey::kDtype, r.dtype);
    put(FieldKey::kSite, r.site);
    put(FieldKey::kFn, r.function);
    if (!r.by.empty()) put(FieldKey::kBy, r.by);
    put(FieldKey::kGlobalStep, r.global_step);
  }
  void operator()(const EvalRecord& r) {
    put(FieldKey::kGlobalStep, r.global_step);
    put(FieldKey::kPhase, r.phase);
  }
  void operator()(const SettingsRecord& r) {
    // Named as the configuration names them; none of these is a field of the contract.
    auto optional = [this](const char* name, const std::optional<std::int64_t>& value) {
      if (value) doc[name] = *value;
    };
    optional("world_size", r.world_size);
    optional("pp", r.pp);
    optional("tp", r.tp);
    optional("dp", r.dp);
    optional("micro_batch_size", r.micro_batch_size);
    optional("grad_accum", r.grad_accum);
    optional("global_batch", r.global_batch);
    optional("seq_length", r.seq_length);
    optional("seed", r.seed);
    optional("max_steps", r.max_steps);
    if (r.split_points) doc["split_points"] = *r.split_points;
    for (const auto& [name, value] : r.other) doc["other"][name] = value;
  }
  void operator()(const TextLine& r) {
    doc["text"] = r.text;
    if (r.truncated) doc["truncated"] = true;
  }
};

}  // namespace

std::string record_json_line(const Record& record, std::string_view file) {
  Json doc;
  const RecordOrigin& at = origin_of(record);
  doc["ev"] = event_name(record);
  doc["file"] = file;
  doc["line"] = at.line;
  doc["rank"] = at.rank;
  doc["t"] = at.t;
  std::visit(Writer{doc}, record);
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace bigmac::logs
