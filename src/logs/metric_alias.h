#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "logs/record.h"

namespace bigmac::logs {

/// What a metric's name means for a StepRecord, whatever the format that printed it.
enum class MetricRole : std::uint8_t {
  kOther,           ///< kept in StepRecord::extra under its folded name
  kCounter,         ///< the step counter: step, iter, iteration, global_step, it
  kLoss,            ///< loss, train_loss, lm_loss (`lm loss`), training_loss
  kGradNorm,        ///< grad_norm, gradient_norm, total_norm (`grad norm`)
  kLr,              ///< lr, learning_rate (`learning rate`)
  kSamplesPerStep,  ///< samples_per_step, global_batch_size
  kStepMs,          ///< step_ms, time_ms; time, dt, ... (is_time_name) when a unit says ms or s
  kEvaluation,      ///< val*, valid*, validation*, eval*, test*: the line is an evaluation
};

/// A metric name as trainers print it, folded for comparison: ASCII lower case, and blanks,
/// dashes, dots and slashes as '_' (`Learning Rate` -> `learning_rate`, `train/loss` ->
/// `train_loss`). Other characters are kept.
std::string fold_metric_name(std::string_view name);

/// The role of a folded name. kStepMs names that need a unit (`time`) are kOther here; the
/// readers decide them with the unit they saw.
MetricRole metric_role(std::string_view folded);

/// Stores `value`, read for a metric of `role` named `name` (as printed: `text`), in the record:
/// the loss, grad norm, lr, step time (milliseconds) or samples per step, or for kOther and
/// kEvaluation a StepRecord::extra entry. False with `error` set when samples per step is not a
/// whole number. kCounter is the caller's to number; passed here it is kept as an extra.
bool store_metric(MetricRole role, const std::string& name, double value, std::string_view text,
                  StepRecord& out, std::string& error);

/// Whether a folded name is one of the time names that mean the step time when a unit (`ms`,
/// `s`) follows the number: time, step_time, iter_time, dt, iter_dt.
bool is_time_name(std::string_view folded);

}  // namespace bigmac::logs
