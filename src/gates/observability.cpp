#include "gates/observability.h"

#include <array>
#include <utility>

namespace bigmac::gates {
namespace {

constexpr std::string_view kProbe = "`[trainer] probe = true`";

struct FieldAdvice {
  std::string_view field;
  std::string_view sentence;
};

// One sentence per field: the bigmac-log line that carries it and, where the probe can write
// it without a change to the trainer, that setting.
constexpr std::array kAdvice = {
    FieldAdvice{"loss",
                "log the loss of every optimizer step: `{\"ev\":\"step\",\"global_step\":N,"
                "\"loss\":L}`, or set [trainer] probe = true (the probe logs the loss backward() "
                "ran on)"},
    FieldAdvice{"grad_norm",
                "log the gradient norm of every optimizer step: `\"grad_norm\":G` in each "
                "`step` event, or set [trainer] probe = true (the probe logs the norm of the "
                "gradients the optimizer applies)"},
    FieldAdvice{"lr",
                "log the learning rate of every optimizer step: `\"lr\":X` in each `step` "
                "event, or set [trainer] probe = true (the probe reads the optimizer's param "
                "groups)"},
    FieldAdvice{"samples_per_step",
                "log the batch arithmetic once before step 0: `{\"ev\":\"batch\","
                "\"micro_batch_size\":M,\"grad_accum\":A,\"dp\":D,\"samples_per_step\":S}` "
                "(or `\"samples_per_step\":S` in each `step` event)"},
    FieldAdvice{"batch",
                "log the batch arithmetic once before step 0: `{\"ev\":\"batch\","
                "\"micro_batch_size\":M,\"grad_accum\":A,\"dp\":D,\"samples_per_step\":S,"
                "\"seq_length\":T}`, or set [trainer] probe = true for the input shape"},
    FieldAdvice{"model",
                "log the model once before step 0: `{\"ev\":\"model\",\"param_count\":P,"
                "\"param_digest\":\"...\"}`, or set [trainer] probe = true (the probe counts the "
                "optimizer's parameters at the first step)"},
    FieldAdvice{"param_digest",
                "log a digest of the initial parameters: `\"param_digest\":\"...\"` in the "
                "`model` event, or set [trainer] probe = true (the probe digests the optimizer's "
                "parameters before its first step)"},
    FieldAdvice{"run",
                "log who each rank is at start: `{\"ev\":\"run\",\"rank\":R,\"world_size\":W,"
                "\"seed\":S}`, or set [trainer] probe = true"},
    FieldAdvice{"pg_ready",
                "log `{\"ev\":\"pg_ready\",\"world_size\":W}` after init_process_group returns, "
                "or set [trainer] probe = true (the probe wraps init_process_group)"},
    FieldAdvice{"done",
                "log `{\"ev\":\"done\",\"steps\":N}` as the last line of a clean exit, or set "
                "[trainer] probe = true"},
    FieldAdvice{"param_digest_after_step",
                "log each rank's parameter digest after a few steps: `\"param_digest\":\"...\"` "
                "in the `step` events of steps 0, 1, 2, 4, ..., or set [trainer] probe = true "
                "(the probe digests them)"},
    FieldAdvice{"input_digest",
                "log a digest of each step's first micro-batch on every rank: `\"input_digest\":"
                "\"...\"` in the `step` event, or set [trainer] probe = true (the probe digests "
                "it)"},
    FieldAdvice{"sample_count",
                "log, on each rank that reads input, the step's sample set in its `digest` event: "
                "`\"sample_count\":N,\"sample_digest\":\"...\"` (the samples of all its "
                "micro-batches, and the sum mod 2^64 of a 64-bit hash of each), or set [trainer] "
                "probe = true (the probe hashes each micro-batch's samples)"},
    FieldAdvice{
        "load",
        "log every checkpoint it resumes: `{\"ev\":\"load\",\"path\":P,\"global_step\":N}`, "
        "or set [trainer] probe = true (the probe wraps torch.load)"},
    FieldAdvice{"digest",
                "log the final parameters' digest: `{\"ev\":\"digest\",\"param_digest\":\"...\"}` "
                "before `done`"},
    FieldAdvice{"layout",
                "log each rank's pipeline stage before step 0: `{\"ev\":\"layout\",\"stage\":S,"
                "\"num_stages\":P,\"first_layer\":A,\"last_layer\":B,\"param_count\":N}`, or, "
                "for a torch.distributed.pipelining program, set [trainer] probe = true (the "
                "probe reads its stages; docs/pipelines.md)"},
    FieldAdvice{"layer_range",
                "name the stage's layers so the probe can read them (parameter names with the "
                "layer's index in the whole model, `layers.4.attn.weight`), or log "
                "`\"first_layer\":A,\"last_layer\":B` in each rank's `layout` event"},
    FieldAdvice{"schedule_model",
                "run a schedule the tool models (ScheduleGPipe or Schedule1F1B, "
                "parallel.schedule gpipe or 1f1b) for the pp2 and shapes gates"},
    FieldAdvice{
        "mb",
        "log every micro-batch pass of every stage: `{\"ev\":\"mb\",\"stage\":S,\"mb\":I,"
        "\"phase\":\"F\",\"start\":T0,\"end\":T1}` (F and B), or, for a "
        "torch.distributed.pipelining program, set [trainer] probe = true (the probe times each "
        "stage's forward and backward of each micro-batch)"},
    FieldAdvice{"shape",
                "log what crosses each stage boundary: `{\"ev\":\"shape\",\"stage\":S,\"where\":"
                "\"send\",\"shape\":[...],\"dtype\":\"...\"}`, or set [trainer] probe = true (the "
                "probe logs tensors passed through dist.send/recv)"},
    FieldAdvice{"stage_loss",
                "log each loss a stage computes: `{\"ev\":\"loss\",\"stage\":S,\"mb\":I,"
                "\"value\":L}`, or, for a torch.distributed.pipelining program, set [trainer] "
                "probe = true (the probe reads the losses its schedule computes)"},
    FieldAdvice{"ckpt",
                "log every checkpoint write: `{\"ev\":\"ckpt\",\"rank\":R,\"step\":N,\"path\":P}`, "
                "or set [trainer] probe = true (the probe wraps torch.save)"},
    FieldAdvice{"world_size",
                "log the world size the rank runs with: `\"world_size\":W` in the `run` event, or "
                "print `[cfg] world_size=W`, or set [trainer] probe = true"},
    FieldAdvice{"pp",
                "log the pipeline size: `\"num_stages\":P` in the `layout` event, or print "
                "`[cfg] pp=P`"},
    FieldAdvice{"tp", "log the tensor-parallel size: print `[cfg] tp=T` at start"},
    FieldAdvice{"dp",
                "log the data-parallel size: `\"dp\":D` in the `batch` event, or print "
                "`[cfg] dp=D`"},
    FieldAdvice{"micro_batch_size",
                "log the micro-batch size: `\"micro_batch_size\":M` in the `batch` event, or "
                "print `[cfg] micro_bs=M`"},
    FieldAdvice{"grad_accum",
                "log the gradient accumulation steps: `\"grad_accum\":A` in the `batch` event, "
                "or print `[cfg] accum=A`"},
    FieldAdvice{"seq_length",
                "log the sequence length: `\"seq_length\":T` in the `batch` event, or print "
                "`[cfg] seq_len=T`"},
    FieldAdvice{"split_points",
                "log each stage's layers: `\"first_layer\":A` in the `layout` event, or print "
                "`[cfg] split_points=[...]`"},
    FieldAdvice{"seed",
                "log the seed the rank runs with: `\"seed\":S` in the `run` event, or print "
                "`[cfg] seed=S`, or set [trainer] probe = true"},
};

}  // namespace

MissingField missing_field(std::string_view field) {
  for (const FieldAdvice& a : kAdvice) {
    if (a.field == field) return MissingField{std::string(field), std::string(a.sentence)};
  }
  return MissingField{std::string(field),
                      "log `" + std::string(field) +
                          "` as a field of a bigmac-log event (docs/log-contract.md), or set " +
                          std::string(kProbe) + " if the probe provides it"};
}

CheckResult not_logged(const GateEvidence& evidence, std::string name, std::string message,
                       const std::vector<std::string>& fields) {
  if (!logged_steps(evidence)) return fail(std::move(name), std::move(message));
  return unobservable(std::move(name), std::move(message), fields);
}

bool logged_steps(const GateEvidence& evidence) {
  for (const RankEvidence& r : evidence.ranks) {
    if (!r.steps.empty()) return true;
  }
  return false;
}

}  // namespace bigmac::gates
