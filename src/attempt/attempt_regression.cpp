#include "attempt/attempt_regression.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "launch/launch_plan.h"

namespace bigmac::attempt {

std::vector<std::string> accept_commands(const RunContext& context, const Reference& reference) {
  std::string options;
  if (!context.config_file.empty())
    options += " -c " + launch::quote_for_display(context.config_file);
  for (const std::string& set : context.command_line_settings())
    options += " --set " + launch::quote_for_display(set);
  const std::string stored = launch::quote_for_display(reference.path.string());
  const std::string fresh = launch::quote_for_display(context.baseline_name + ".new.json");
  return {fmt::format("bigmac-bringup run-all{} --until single --no-baseline", options),
          fmt::format("bigmac-bringup baseline record{} -o {}", options, fresh),
          fmt::format("bigmac-bringup baseline diff {} {}", stored, fresh),
          fmt::format("mv {} {} && git commit {} -m \"baseline: <why the numbers moved>\"", fresh,
                      stored, stored)};
}

std::optional<diagnose::RegressionFacts> regression_facts(const RunContext& context,
                                                          const AttemptPlan& plan,
                                                          const gates::GateEvidence& evidence,
                                                          const Reference* reference) {
  // Only the first gate compares with a stored baseline: a later one compares with whatever
  // the first recorded, and a mismatch there is that gate's own finding.
  if (plan.index != 0 || reference == nullptr) return std::nullopt;
  baseline::Baseline observed = baseline::summarize_records(
      evidence.all_records(), "observed", plan.gate.inputs_digest, evidence.loss_rank);
  observed.recorded = context.recorded(plan.gate);
  const auto regression = baseline::find_regression(reference->baseline, reference->path.string(),
                                                    observed, gates::comparison_policy(*plan.spec));
  if (!regression) return std::nullopt;

  diagnose::RegressionFacts facts;
  std::vector<std::string> accept = accept_commands(context, *reference);
  for (std::size_t i = 0; i < accept.size(); ++i)
    accept[i] = fmt::format("{}) `{}`", i + 1, accept[i]);
  facts.values = {{"file", regression->baseline_file},
                  {"step", regression->step ? std::to_string(*regression->step) : "-"},
                  {"metric", regression->metric},
                  {"headline", regression->headline()},
                  {"moved", regression->what_moved()},
                  {"last_good", regression->last_good()},
                  {"accept", fmt::format("{}", fmt::join(accept, " "))}};
  for (const std::string& line : regression->side_by_side())
    facts.evidence.push_back({-1, "", 0, 0, line, 1});
  for (const baseline::InputChange& change : regression->changes)
    facts.evidence.push_back({-1, "", 0, 0, "changed: " + change.describe(), 1});
  return facts;
}

}  // namespace bigmac::attempt
