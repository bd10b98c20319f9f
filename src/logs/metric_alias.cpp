#include "logs/metric_alias.h"

#include <array>
#include <utility>

#include "logs/number_text.h"

namespace bigmac::logs {

namespace {

// The aliases, folded. One table for every format that names its metrics freely (Python dict
// lines, plain step lines); Megatron and torchtitan keep their fixed spellings.
constexpr std::array<std::pair<std::string_view, MetricRole>, 17> kAliases{{
    {"step", MetricRole::kCounter},
    {"iter", MetricRole::kCounter},
    {"iteration", MetricRole::kCounter},
    {"global_step", MetricRole::kCounter},
    {"it", MetricRole::kCounter},
    {"loss", MetricRole::kLoss},
    {"train_loss", MetricRole::kLoss},
    {"training_loss", MetricRole::kLoss},
    {"lm_loss", MetricRole::kLoss},
    {"grad_norm", MetricRole::kGradNorm},
    {"gradient_norm", MetricRole::kGradNorm},
    {"total_norm", MetricRole::kGradNorm},
    {"lr", MetricRole::kLr},
    {"learning_rate", MetricRole::kLr},
    {"samples_per_step", MetricRole::kSamplesPerStep},
    {"global_batch_size", MetricRole::kSamplesPerStep},
    {"step_ms", MetricRole::kStepMs},
}};

constexpr std::array<std::string_view, 6> kEvaluationWords{"val",  "valid",      "validation",
                                                           "eval", "evaluation", "test"};

}  // namespace

std::string fold_metric_name(std::string_view name) {
  std::string folded;
  folded.reserve(name.size());
  for (char c : name) {
    if (c >= 'A' && c <= 'Z') {
      folded.push_back(static_cast<char>(c - 'A' + 'a'));
    } else if (c == ' ' || c == '\t' || c == '-' || c == '.' || c == '/') {
      folded.push_back('_');
    } else {
      folded.push_back(c);
    }
  }
  return folded;
}

MetricRole metric_role(std::string_view folded) {
  for (const auto& [alias, role] : kAliases) {
    if (alias == folded) return role;
  }
  if (folded == "time_ms") return MetricRole::kStepMs;
  // `val_loss`, `eval_runtime`, `test accuracy`: the first word names an evaluation.
  std::string_view first = folded.substr(0, folded.find('_'));
  for (std::string_view word : kEvaluationWords) {
    if (first == word) return MetricRole::kEvaluation;
  }
  return MetricRole::kOther;
}

bool store_metric(MetricRole role, const std::string& name, double value, std::string_view text,
                  StepRecord& out, std::string& error) {
  switch (role) {
    case MetricRole::kLoss:
      out.loss = value;
      return true;
    case MetricRole::kGradNorm:
      out.grad_norm = value;
      return true;
    case MetricRole::kLr:
      out.lr = value;
      return true;
    case MetricRole::kStepMs:
      out.step_ms = value;
      return true;
    case MetricRole::kSamplesPerStep:
      out.samples_per_step = exact_integer(value);
      if (!out.samples_per_step) {
        error =
            "field " + name + ": '" + std::string(text.substr(0, 40)) + "' is not a whole number";
      }
      return out.samples_per_step.has_value();
    case MetricRole::kCounter:
    case MetricRole::kEvaluation:
    case MetricRole::kOther:
      out.extra.emplace_back(name, value);
      return true;
  }
  return true;
}

bool is_time_name(std::string_view folded) {
  return folded == "time" || folded == "step_time" || folded == "iter_time" || folded == "dt" ||
         folded == "iter_dt";
}

}  // namespace bigmac::logs
