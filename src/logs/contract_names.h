#pragma once

// The names of the log contract (bigmac-log v1, docs/log-contract.md), written down once: the
// parsers of logs/ and the writer of bigmac-train both take their spellings from these lists.
// Header-only and free of dependencies (CMake target bigmac_log_contract), so that bigmac-train
// links nothing of the orchestrator but this.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

// X(enumerator, spelling) for every field name of the contract.
#define BIGMAC_CONTRACT_FIELDS(X)                \
  X(kEv, "ev")                                   \
  X(kRank, "rank")                               \
  X(kT, "t")                                     \
  X(kWorldSize, "world_size")                    \
  X(kLocalRank, "local_rank")                    \
  X(kDevice, "device")                           \
  X(kBackend, "backend")                         \
  X(kDtype, "dtype")                             \
  X(kSeed, "seed")                               \
  X(kTorchVersion, "torch_version")              \
  X(kPythonVersion, "python_version")            \
  X(kPid, "pid")                                 \
  X(kToolVersion, "tool_version")                \
  X(kInitMs, "init_ms")                          \
  X(kMicroBatchSize, "micro_batch_size")         \
  X(kGradAccum, "grad_accum")                    \
  X(kDp, "dp")                                   \
  X(kSamplesPerStep, "samples_per_step")         \
  X(kSeqLength, "seq_length")                    \
  X(kInputShape, "input_shape")                  \
  X(kInputDtype, "input_dtype")                  \
  X(kParamCount, "param_count")                  \
  X(kParamDigest, "param_digest")                \
  X(kBufferDigest, "buffer_digest")              \
  X(kStage, "stage")                             \
  X(kNumStages, "num_stages")                    \
  X(kFirstLayer, "first_layer")                  \
  X(kLastLayer, "last_layer")                    \
  X(kDpRank, "dp_rank")                          \
  X(kDpSize, "dp_size")                          \
  X(kTied, "tied")                               \
  X(kTiedDuplicateCount, "tied_duplicate_count") \
  X(kLayersUnknown, "layers_unknown")            \
  X(kSchedule, "schedule")                       \
  X(kGradNormSq, "grad_norm_sq")                 \
  X(kPrevRank, "prev_rank")                      \
  X(kNextRank, "next_rank")                      \
  X(kPeer, "peer")                               \
  X(kGlobalStep, "global_step")                  \
  X(kLoss, "loss")                               \
  X(kGradNorm, "grad_norm")                      \
  X(kLr, "lr")                                   \
  X(kStepMs, "step_ms")                          \
  X(kMb, "mb")                                   \
  X(kPhase, "phase")                             \
  X(kStart, "start")                             \
  X(kEnd, "end")                                 \
  X(kWhere, "where")                             \
  X(kName, "name")                               \
  X(kShape, "shape")                             \
  X(kValue, "value")                             \
  X(kStep, "step")                               \
  X(kPath, "path")                               \
  X(kSteps, "steps")                             \
  X(kLossCount, "loss_count")                    \
  X(kBound, "bound")                             \
  X(kBounded, "bounded")                         \
  X(kSeedNote, "seed_note")                      \
  X(kInputDigest, "input_digest")                \
  X(kSampleCount, "sample_count")                \
  X(kSampleDigest, "sample_digest")              \
  X(kSampleHashes, "sample_hashes")              \
  X(kGradNormPreclip, "grad_norm_preclip")       \
  X(kSpawnedNprocs, "spawned_nprocs")            \
  X(kSpawnInPlace, "spawn_in_place")             \
  X(kStacksSignal, "stacks_signal")              \
  X(kStacksPath, "stacks_path")                  \
  X(kStacksUnavailable, "stacks_unavailable")    \
  X(kMainThread, "main_thread")                  \
  X(kHost, "host")                               \
  X(kLibraryDirs, "library_dirs")                \
  X(kGroup, "group")                             \
  X(kSeq, "seq")                                 \
  X(kOp, "op")                                   \
  X(kSite, "site")                               \
  X(kFn, "fn")                                   \
  X(kBy, "by")

// X(enumerator, spelling) for every event (`ev`) of the contract.
#define BIGMAC_CONTRACT_EVENTS(X) \
  X(kRun, "run")                  \
  X(kPgReady, "pg_ready")         \
  X(kBatch, "batch")              \
  X(kModel, "model")              \
  X(kLayout, "layout")            \
  X(kStep, "step")                \
  X(kHeartbeat, "heartbeat")      \
  X(kMicroBatch, "mb")            \
  X(kShape, "shape")              \
  X(kLoss, "loss")                \
  X(kCheckpoint, "ckpt")          \
  X(kDigest, "digest")            \
  X(kDone, "done")                \
  X(kEval, "eval")                \
  X(kLoad, "load")                \
  X(kCollective, "coll")

namespace bigmac::logs {

#define BIGMAC_CONTRACT_ENUMERATOR(id, spelling) id,
#define BIGMAC_CONTRACT_SPELLING(id, spelling) spelling,

/// A field name of the contract. Unknown names have none and are ignored by readers.
enum class FieldKey : std::uint8_t { BIGMAC_CONTRACT_FIELDS(BIGMAC_CONTRACT_ENUMERATOR) kCount };

/// An event of the contract, the value of its `ev` field.
enum class EventKind : std::uint8_t { BIGMAC_CONTRACT_EVENTS(BIGMAC_CONTRACT_ENUMERATOR) kCount };

inline constexpr std::size_t kFieldKeyCount = static_cast<std::size_t>(FieldKey::kCount);
inline constexpr std::size_t kEventKindCount = static_cast<std::size_t>(EventKind::kCount);

/// Spellings, indexed by the enumerators.
inline constexpr std::array<std::string_view, kFieldKeyCount> kFieldKeyNames{
    BIGMAC_CONTRACT_FIELDS(BIGMAC_CONTRACT_SPELLING)};
inline constexpr std::array<std::string_view, kEventKindCount> kEventKindNames{
    BIGMAC_CONTRACT_EVENTS(BIGMAC_CONTRACT_SPELLING)};

#undef BIGMAC_CONTRACT_ENUMERATOR
#undef BIGMAC_CONTRACT_SPELLING

constexpr std::string_view key_name(FieldKey key) {
  return kFieldKeyNames[static_cast<std::size_t>(key)];
}

constexpr std::string_view event_kind_name(EventKind event) {
  return kEventKindNames[static_cast<std::size_t>(event)];
}

}  // namespace bigmac::logs
