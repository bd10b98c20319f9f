#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace bigmac::logs {

/// Where a record came from. `rank` is the event's own rank field, else the launcher prefix
/// (`[rank3]:`, `3: `), else the stream's default (-1 = unknown). `line` is 1-based in its
/// stream. `t` is the event's wall time, else a parsed timestamp prefix, else 0.
struct RecordOrigin {
  int rank = -1;
  std::int64_t line = 0;
  double t = 0;
};

/// `run`: who this rank is and what it runs on (docs/log-contract.md).
struct RunRecord {
  RecordOrigin at;
  int world_size = 0;
  int local_rank = -1;
  std::string device, backend, dtype;
  std::int64_t seed = 0;
  std::string torch_version;
  std::string python_version;  ///< Python trainers; empty when not logged
  std::int64_t pid = 0;
  std::string tool_version;
  /// The step bound the probe enforces (BIGMAC_PROBE_MAX_STEPS), when it wrote one.
  std::optional<std::int64_t> bound{};
  /// How many workers torch.multiprocessing.spawn started, when this rank is one (the probe's).
  std::optional<std::int64_t> spawned_nprocs{};
  /// The workers torch.multiprocessing.spawn was asked for when, instead, this rank ran the
  /// worker function itself (the probe's BIGMAC_PROBE_SPAWN_IN_PLACE).
  std::optional<std::int64_t> spawn_in_place{};
  /// Stacks on request (the probe's): the signal that makes the rank write every thread's
  /// Python stack to `stacks_path` (faulthandler's format), the main thread's id as it prints
  /// it, the host the pid is on, and the directories holding library code (os.pathsep-separated)
  /// as opposed to the program's own. `stacks_unavailable` says why there are none.
  std::optional<std::int64_t> stacks_signal{};
  std::string stacks_path;
  std::string stacks_unavailable;
  std::string main_thread;
  std::string host;
  std::string library_dirs;
};

/// `pg_ready`: the process group formed.
struct PgReadyRecord {
  RecordOrigin at;
  double init_ms = 0;
  int world_size = 0;
  std::string backend;
};

/// `batch`: the batch arithmetic this rank uses.
struct BatchRecord {
  RecordOrigin at;
  std::int64_t micro_batch_size = 0;
  std::int64_t grad_accum = 0;
  std::int64_t dp = 0;
  std::int64_t samples_per_step = 0;
  std::int64_t seq_length = 0;
  std::vector<std::int64_t> input_shape;  ///< one micro-batch
  std::string input_dtype;
};

/// `model`: the whole model's size and initial parameter digest.
struct ModelRecord {
  RecordOrigin at;
  std::int64_t param_count = 0;
  std::string param_digest;
  /// The seed in effect when the model's first parameter was made (the probe's), when known;
  /// `seed_note` says why it is not.
  std::optional<std::int64_t> seed{};
  std::string seed_note{};
};

/// `layout`: which layers and parameters this rank's pipeline stage holds.
struct LayoutRecord {
  RecordOrigin at;
  int stage = 0;
  int num_stages = 0;
  int first_layer = -1;  ///< inclusive; -1 when the stage holds no layer
  int last_layer = -1;   ///< inclusive; -1 when the stage holds no layer
  int dp_rank = 0;
  int dp_size = 0;
  std::int64_t param_count = 0;  ///< this stage
  std::vector<std::string> tied;
  std::int64_t tied_duplicate_count = 0;
  /// Why the stage's layer range is not known (the probe could not read it from the stage's
  /// parameter names); empty when first_layer/last_layer say it.
  std::string layers_unknown{};
  /// The schedule the stage ran under, as the probe read it ("gpipe", "1f1b", or the class
  /// name of one the tool does not model); empty when not logged.
  std::string schedule{};
  /// A hand-written pipeline's neighbours (the probe's, from the rank's transfers): the rank it
  /// receives its input from and the one it sends its output to, -1 for none. Its stage is
  /// counted along that chain when it is -1 (logs::resolve_chain_stages).
  int prev_rank = -1;
  int next_rank = -1;
};

/// One optimizer step. bigmac logs carry every field; foreign formats fill what they print.
/// `global_step` is 0-based everywhere; formats that print their own counter are numbered by
/// StepNumbering's one rule (Megatron's `iteration 10` and torchtitan's `step: 10`, printed
/// after the step, become global_step 9).
struct StepRecord {
  RecordOrigin at;
  std::int64_t global_step = 0;
  std::optional<double> loss;
  std::optional<double> grad_norm;
  /// The norm clip_grad_norm_ measured before it clipped (the probe's; docs/probe.md).
  std::optional<double> grad_norm_preclip{};
  std::optional<double> lr;
  std::optional<std::int64_t> samples_per_step;
  std::optional<double> step_ms;
  /// The probe's digests of this rank (docs/probe.md): the step's first micro-batch, and the
  /// parameters after the update (steps 0, 1, 2, 4, 8, ...). 64 bits of the logged hex digest.
  std::optional<std::uint64_t> input_digest{};
  std::optional<std::uint64_t> param_digest{};
  /// The probe's sample set of the step (every micro-batch's samples): see DigestRecord.
  std::optional<std::int64_t> sample_count{};
  std::optional<std::uint64_t> sample_digest{};
  std::vector<std::uint64_t> sample_hashes{};
  /// The probe's digest of the model's buffers (BatchNorm statistics) as the first forward of a
  /// digest step read them (after DDP broadcast rank 0's, where it does).
  std::optional<std::uint64_t> buffer_digest{};
  /// Other numbers the format prints (Megatron `loss scale`, torchtitan `tps`, ...), by the
  /// name the format uses, in line order.
  std::vector<std::pair<std::string, double>> extra;
};

/// `heartbeat`: progress for the watchdog, from every rank every step.
struct HeartbeatRecord {
  RecordOrigin at;
  std::int64_t global_step = 0;
  /// "start": the rank began global_step; empty or "end": it finished it. A rank that logs
  /// when it begins a step lets the watchdog tell the rank that never began it from the ranks
  /// that wait for it inside.
  std::string phase;
};

/// `eval`: the rank pauses training (an evaluation, or other work between steps). From `start`
/// until its `end` (or the next step) the watchdog allows launch.stall_timeout_s of silence.
struct EvalRecord {
  RecordOrigin at;
  std::int64_t global_step = 0;
  std::string phase;  ///< "start" or "end"
};

/// `mb`: one forward or backward pass of one micro-batch on one pipeline stage.
struct MicroBatchRecord {
  RecordOrigin at;
  std::int64_t global_step = 0;
  int stage = 0;
  int mb = 0;
  char phase = 'F';  ///< 'F' or 'B'
  double start = 0;
  double end = 0;
};

/// `shape`: a tensor shape seen at a stage boundary (trace.shapes=true).
struct ShapeRecord {
  RecordOrigin at;
  std::int64_t global_step = 0;
  int stage = 0;
  int mb = 0;
  std::string where;  ///< enter, exit, send, recv, labels
  std::string name;   ///< hidden_states, labels, logits
  std::vector<std::int64_t> shape;
  std::string dtype, device;
  /// A point-to-point transfer's other rank (the probe's `p2p` shapes), -1 when not logged.
  int peer = -1;
};

/// `loss`: a stage computed a loss on a micro-batch.
struct LossRecord {
  RecordOrigin at;
  std::int64_t global_step = 0;
  int stage = 0;
  int mb = 0;
  double value = 0;
};

/// `ckpt`: a checkpoint was written.
struct CheckpointRecord {
  RecordOrigin at;
  std::int64_t step = 0;
  std::string path;
};

/// `digest`: this rank's own digests at `global_step` (bigmac-train writes one each step and
/// one at the end): the parameters it holds after the update (at steps 0, 1, 2, 4, ... and the
/// last) and its first micro-batch of the step. Either may be absent. A rank that reads the
/// step's input also gives its sample set: how many samples it consumed over every micro-batch
/// of the step, and the sum (mod 2^64) of a 64-bit hash of each, so the readers' sets add up to
/// the step's whatever the order; for a rank's first samples, each one's hash as well
/// (`sample_hashes`, 16 hex digits a sample), so that a sample read twice shows.
struct DigestRecord {
  RecordOrigin at;
  std::string param_digest;
  std::int64_t global_step = 0;
  std::optional<std::uint64_t> params;        ///< param_digest as a number, when it is one
  std::optional<std::uint64_t> input_digest;  ///< the step's first micro-batch
  std::optional<std::int64_t> sample_count{};
  std::optional<std::uint64_t> sample_digest{};
  std::vector<std::uint64_t> sample_hashes{};    ///< every sample's hash, when logged
  std::optional<std::uint64_t> buffer_digest{};  ///< the buffers the step's forward read
};

/// `done`: last line of a clean exit.
struct DoneRecord {
  RecordOrigin at;
  std::int64_t steps = 0;
  bool bounded = false;  ///< the probe ended the program at its step bound
};

/// `load`: the program read a file with torch.load (the probe's): a checkpoint it resumes when
/// an earlier run's `ckpt` wrote that path.
struct LoadRecord {
  RecordOrigin at;
  std::string path;
  std::int64_t global_step = 0;  ///< steps counted before the load
};

/// `coll`: a collective this rank issued, logged before it went in (the probe's ledger,
/// docs/probe.md): the n-th (`seq`, from 0) on its process group, in program order.
struct CollectiveRecord {
  RecordOrigin at;
  std::string group;  ///< "world", the group's global ranks ("0,2"), or a p2p channel ("0->1")
  std::int64_t seq = 0;
  std::string op;                   ///< all_reduce, barrier, all_gather_into_tensor, ...
  std::vector<std::int64_t> shape;  ///< this rank's input; empty for none (barrier)
  std::string dtype;
  std::string site;      ///< the program's own line that called it: "train.py:61"
  std::string function;  ///< the function holding that line
  std::string by;        ///< what issued it for that line: "DDP bucket 0" (empty: the line itself)
  std::int64_t global_step = 0;

  /// "all_reduce #12 of world (float32[1,4], train.py:61)", "all_reduce #3 of world
  /// (float32[4128], DDP bucket 0, train.py:70)".
  std::string describe() const;
  /// A point-to-point channel ("0->1": sends from rank 0 to rank 1, numbered on both sides).
  bool p2p() const { return group.find("->") != std::string::npos; }
  /// Same op, shape and dtype: what the ranks must agree on at one index. On a p2p channel
  /// one side sends and the other receives: they agree on the tensor. all_to_all(_single) may
  /// split unevenly: each rank's input has its own size.
  bool same_call(const CollectiveRecord& other) const {
    const bool uneven = op.starts_with("all_to_all");
    return (p2p() || op == other.op) && (uneven || shape == other.shape) && dtype == other.dtype;
  }
};

/// `[cfg] world_size=8 pp=4 ...`: the effective configuration a trainer says it runs with
/// (settings_line.h), for comparison with what a gate asked for. Absent values were not printed.
struct SettingsRecord {
  RecordOrigin at;
  std::optional<std::int64_t> world_size;
  std::optional<std::int64_t> pp;
  std::optional<std::int64_t> tp;
  std::optional<std::int64_t> dp;
  std::optional<std::int64_t> micro_batch_size;
  std::optional<std::int64_t> grad_accum;
  std::optional<std::int64_t> global_batch;
  std::optional<std::int64_t> seq_length;
  std::optional<std::int64_t> seed;
  std::optional<std::int64_t> max_steps;
  std::optional<std::vector<std::int64_t>> split_points;
  std::vector<std::pair<std::string, std::string>> other;  ///< other keys, as written
};

/// A line that is not a record (traceback, NCCL line, warning), kept as context for diagnosis.
/// Launcher prefixes and colour codes are removed; the text is cut at a bounded length.
struct TextLine {
  RecordOrigin at;
  std::string text;
  bool truncated = false;  ///< the original line was longer than the kept text
};

/// Everything a log stream yields, in line order.
using Record = std::variant<RunRecord, PgReadyRecord, BatchRecord, ModelRecord, LayoutRecord,
                            StepRecord, HeartbeatRecord, MicroBatchRecord, ShapeRecord, LossRecord,
                            CheckpointRecord, DigestRecord, DoneRecord, EvalRecord, LoadRecord,
                            CollectiveRecord, SettingsRecord, TextLine>;

/// The origin of any record.
const RecordOrigin& origin_of(const Record& record);

/// The contract event name of a record (`step`, `mb`, ...); `cfg` for a SettingsRecord, `text`
/// for a TextLine.
std::string_view event_name(const Record& record);

}  // namespace bigmac::logs
