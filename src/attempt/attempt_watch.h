#pragma once

#include <map>
#include <optional>

#include "attempt/attempt_plan.h"
#include "attempt/attempt_services.h"
#include "attempt/run_context.h"
#include "gates/early_stop.h"
#include "gates/gate_evidence.h"
#include "launch/run_result.h"
#include "logs/probe_merge.h"
#include "logs/rank_log.h"

namespace bigmac::attempt {

/// What the ranks of one attempt did, as watched (phases launch + watch): how the launch ended
/// and every rank's records, parsed once, live.
struct AttemptWatch {
  launch::RunResult result;
  double started_at = 0;  ///< Unix seconds
  /// By rank: what the trainer wrote to its own log file, and what its stdout/stderr carried.
  /// A trainer may write its events to both; the log file wins when it has any line.
  std::map<int, logs::RankLog> from_file;
  std::map<int, logs::RankLog> from_streams;
  /// By rank: the probe's events (`[trainer] probe`), merged under the trainer's own records.
  std::map<int, logs::RankLog> from_probe;
  /// The gate's step count: steps numbered this or higher are past the bound the probe or the
  /// orchestrator ended the ranks at, and are not judged (the gate runs exactly its steps).
  std::int64_t step_bound = 0;
  /// What earlier attempts of the run wrote as checkpoints (fresh_start judges a load of one).
  std::map<std::string, std::string> earlier_checkpoints;
  int model_parallel = 1;  ///< pp × tp of the launch, for the probe's samples/step
  int data_parallel = 1;   ///< dp of the launch
  /// trainer.loss_rank when the launch has that rank, else 0: the rank that speaks for the run
  /// (its printed numbers; with the probe alone, the replicas' values combined on it).
  int loss_rank = 0;
  int tensor_parallel = 1;  ///< tp of the launch
  /// The baseline's parameter count (0: none): whether a pipeline's stages hold a weight twice.
  std::int64_t model_param_count = 0;
  /// Why the ranks were stopped early (launch status kStoppedEarly): the gate's first failure
  /// that no later record could undo, found on the records as they came.
  std::optional<gates::CertainFailure> certain;

  /// The gate's layout and step bound, from its effective configuration: the one place the
  /// live watch and `diagnose <attempt folder>` (attempt_folder.h) take them from.
  void configure(const config::Config& cfg);

  /// When the records are read: while the ranks still run (the early stop's question), or
  /// once they have ended.
  enum class Moment { kLive, kEnded };

  /// One rank's records: its log file's when it wrote one (plus the context lines of its
  /// streams), else its streams', with the probe's merged in by step (trainer's values win).
  /// Live, a trainer that wrote records of its own but no step yet is one whose step lines
  /// may still be on their way (its log file is read with some delay): the probe's steps are
  /// not taken for its own until the ranks have ended.
  logs::RankLog rank_log(int rank, Moment moment = Moment::kEnded) const;

  /// How a pipeline's probe values add up to the run's (logs::combine_stage_values).
  logs::StageCombination stage_combination() const;
};

/// Starts the plan's ranks on a fresh runner and watches them to the end (watchdog, Ctrl-C, and
/// the gate's first certain failure unless the gate says stop_on_divergence = false),
/// reporting ranks coming up and the owner's steps (against `reference`) to progress.
AttemptWatch launch_and_watch(const AttemptPlan& plan, const Reference* reference,
                              const std::filesystem::path& run_dir, AttemptServices& services);

/// The gate's evidence: every launched rank's records and exit, in rank order.
gates::GateEvidence gather_evidence(const AttemptWatch& watch);

}  // namespace bigmac::attempt
