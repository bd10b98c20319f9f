#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "adopt/trial_logs.h"
#include "adopt/trial_run.h"

namespace bigmac::adopt {

/// What the trials measured of how the program reads what the gates hand it (one process, then
/// two): written into the drafted configuration as explicit settings that every gate plans
/// from, each with the trial's evidence, so that no gate assumes the program works like
/// bigmac-train.
struct ProgramModel {
  // The step count. The probe bounds every gate's steps itself; the flag's relation decides
  // what the gates hand it, so that a program ending by itself ends at the gate's count.
  std::optional<int> max_steps_offset;      ///< steps run minus the step flag's value (0 or 1)
  bool step_flag_ignored = false;           ///< it ran on to the probe's bound: not a step flag
  std::optional<std::int64_t> ended_after;  ///< ended by itself after fewer steps than asked
  std::string steps_evidence;

  bool distributed = false;  ///< the probe saw torch.distributed.init_process_group
  std::string distributed_evidence;

  bool second_trial = false;               ///< two processes ran and were read
  std::string second_trial_problem;        ///< why their numbers could not be read, when they ran
  std::optional<std::string> batch_scope;  ///< "process" or "global"
  std::string batch_evidence;
  std::optional<std::string> accum_scope;  ///< "process" or "divided"
  std::string accum_evidence;
  std::vector<int> printing_ranks;  ///< ranks whose own output carried its step lines
  bool stages = false;              ///< ranks exchanged tensors point to point
  std::string stages_evidence;
  // What the probe read of the stages in the two processes (docs/pipelines.md), when it did.
  std::optional<std::string> schedule;  ///< "gpipe" or "1f1b": the stages' schedule
  std::string schedule_evidence;
  std::optional<int> micro_batches;  ///< forward passes of each stage in each step
  std::optional<int> num_layers;     ///< the layers the stages hold, counted
  std::string layers_evidence;
  /// The stages follow the world size: one process ran one stage, two ran two (every process
  /// is a stage; the target layout is pp = processes, with no data-parallel replica).
  bool stage_per_process = false;
  /// The batch flag is the whole step's batch, split into micro-batches by the schedule (flag =
  /// first input's batch dimension × micro-batches): it is left as written, the gates keep it.
  bool batch_flag_is_step = false;
  std::string batch_flag_evidence;
  /// Checkpoints the second trial loaded that the first one wrote: the program resumes what an
  /// earlier run left in its working directory.
  std::vector<std::string> resumed;
};

/// The step flag's relation from the first trial: it was given `asked` with the probe's bound at
/// `bound`; the optimizer steps the probe counted (else the trainer's lines) say whether it runs
/// exactly that many, one more (iterations 0..N), stops earlier by itself, or ignores it.
void measure_steps(std::int64_t asked, std::int64_t bound, bool has_flag, const std::string& flag,
                   const TrialRun& run, const TrialLogs& logs, ProgramModel& model);

/// Whether the program is distributed (the probe's pg_ready in the first trial).
void measure_distribution(const TrialLogs& logs, ProgramModel& model);

/// Whether a pipeline's batch flag (value `flag`, `name` as written) is the whole step's batch:
/// the first trial's first input is one micro-batch, and its backward() calls a step are the
/// micro-batches. Sets batch_flag_is_step with its evidence.
void measure_step_batch(const TrialLogs& one, const std::string& name, std::int64_t flag,
                        ProgramModel& model);

/// What one process and two processes with the same flags show: the batch flag per process or
/// global (the first input's batch dimension), the accumulation per process or divided by the
/// world size (backward() calls a step), which ranks print the steps, pipeline stages
/// (point-to-point transfers) and checkpoints resumed from the first trial.
void measure_two_processes(const TrialLogs& one, const std::vector<TrialLogs>& two,
                           const TrialRun& run, bool has_batch_flag, bool has_accum_flag,
                           ProgramModel& model);

}  // namespace bigmac::adopt
