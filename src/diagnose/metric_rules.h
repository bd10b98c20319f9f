#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "baseline/baseline.h"
#include "baseline/comparison.h"
#include "baseline/progress.h"
#include "baseline/step_series.h"
#include "diagnose/catalog.h"
#include "diagnose/diagnosis.h"
#include "diagnose/message_template.h"
#include "launch/rank_ending.h"
#include "launch/watchdog.h"
#include "logs/rank_log.h"
#include "logs/record.h"

namespace bigmac::diagnose {

/// An environment variable the ranks disagree on (MASTER_PORT, WORLD_SIZE...).
struct EnvMismatch {
  std::string name;
  std::vector<std::pair<int, std::string>> values;  ///< rank → value
};

/// A process holding the rendezvous port.
struct HeldPort {
  int port = 0;
  std::int64_t pid = 0;
  std::string command;
};

/// What the launcher knows and the logs cannot say (a hang is not an error).
struct LaunchFacts {
  int planned_world_size = 0;  ///< 0: unknown
  int processes_started = 0;
  std::vector<EnvMismatch> env_mismatches;
  /// The ranks the watchdog found without progress, the first to go silent first (its stall
  /// list, launch/watchdog.h).
  std::vector<launch::Stall> stalled;
  std::optional<HeldPort> port_holder;
  /// Every rank's ending (launch::ending_of), in any order; rules skip the unknown ones and
  /// those the orchestrator stopped.
  std::vector<launch::RankEnding> exited;
};

/// Thresholds of the metric rules. A failed gate's diagnosis gets the gate's own (its
/// [params], gates/series_rules.h); without a gate the single gate's defaults apply.
struct MetricLimits {
  baseline::Tolerance loss = baseline::default_tolerance(baseline::Metric::kLoss);
  baseline::Tolerance grad_norm = baseline::default_tolerance(baseline::Metric::kGradNorm);
  baseline::Tolerance lr = baseline::default_tolerance(baseline::Metric::kLr);
  baseline::GrowthRule growth;  ///< when grad_norm counts as growing
  /// A pipeline stage that paused longer than this between two signs of work is idle: the
  /// gate's `idle_limit_s`, which `no_idle_stage` judges by the same baseline::longest_idle.
  double idle_limit_s = baseline::kDefaultIdleLimitS;
  /// A stage that stopped while the others went on this long is idle (launch.stall_timeout_s).
  double stall_limit_s = 60;
};

/// What the configuration asked for, where the logs show only what the trainer made of it
/// (a warmup logs a fraction of the configured lr at step 0). Empty: not known (logs alone).
struct ConfiguredValues {
  std::optional<double> lr;  ///< train.lr
  /// What to change when samples/step differs from the baseline, as the gate's checks word it
  /// from the program model (gates::samples_per_step_fix); empty: the arithmetic's own fix.
  std::string samples_per_step_fix{};
  int dp = 0;          ///< the gate's data-parallel size (0: not known)
  int pp = 0;          ///< its pipeline stages (0: not known); pipeline wording only when > 1
  int num_layers = 0;  ///< model.num_layers, which layer_coverage judges by (0: not known)
  int loss_rank = 0;   ///< trainer.loss_rank: whose step series is the run's (gates::GateEvidence)
};

/// A first gate that no longer reproduces its stored baseline, as baseline::Regression found
/// it, in the values the `baseline_regression` rule words: file, step, metric, headline,
/// moved, last_good, accept. It supersedes the rules that compare single steps with the
/// baseline (their route back names later gates: at the first gate the finding is this).
struct RegressionFacts {
  TemplateValues values;
  std::vector<Evidence> evidence;
};

/// Everything the metric rules look at.
struct MetricInput {
  std::span<const logs::RankLog> logs;  ///< evidence names each by its label()
  /// The ranks that exited non-zero by themselves, with their last stderr lines (launcher
  /// prefixes stripped, RankEnding::error_lines): the catalog is matched against those first.
  std::span<const launch::RankEnding> exit_errors;
  /// The baseline (gate `single`) itself: rules skip a step it has no value for, and what its
  /// structure does not say (param_count, param_digest) is not known.
  const baseline::Baseline* baseline = nullptr;
  const LaunchFacts* launch = nullptr;
  const RegressionFacts* regression = nullptr;
  ConfiguredValues configured;
  MetricLimits limits;
  /// Checkpoints earlier gate attempts wrote: path -> who (gates::GateEvidence).
  const std::map<std::string, std::string>* earlier_checkpoints{};
  /// The evidence shows a step-0 difference is not the data order's (the sample sets are the
  /// baseline's or their count differs, or an invariant failed: gates::judge_data_order), so
  /// no rule blames the layout for it.
  bool order_not_the_layouts = false;
};

/// A metric rule the code implements and the values its catalog texts may use.
struct MetricRuleSpec {
  std::string_view id;
  std::vector<std::string_view> values;
};

/// Every metric rule, in evaluation order.
std::span<const MetricRuleSpec> metric_rule_specs();

/// Runs every rule the catalog names and words each finding with the catalog's texts.
std::vector<Diagnosis> apply_metric_rules(const Catalog& catalog, const MetricInput& input);

}  // namespace bigmac::diagnose
