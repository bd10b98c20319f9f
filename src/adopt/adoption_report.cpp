#include "adopt/adoption_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "adopt/config_draft.h"

namespace bigmac::adopt {
namespace {

std::string shown(const std::vector<std::string>& argv) {
  std::vector<std::string> words;
  for (const std::string& w : argv) words.push_back(shown_word(w));
  return fmt::format("{}", fmt::join(words, " "));
}

std::string trial_line(const ReportInputs& in) {
  const std::string end = in.run.exited    ? in.run.exit.describe()
                          : in.run.stopped ? "stopped by adopt after its steps"
                                           : "stopped by adopt at the time limit";
  std::string out = fmt::format(
      "trial: {}\n  one process (rank 0 of 1), the probe on: {} step(s) logged, {} after {:.1f} "
      "s\n",
      shown(in.trial_argv), in.run.steps_seen, end, in.run.seconds);
  if (in.run.exited && !in.run.exit.success()) {
    out +=
        "  warning: the command failed after its steps; the single gate's exit_status check "
        "will fail the same way until it ends cleanly\n";
  }
  return out;
}

std::string format_lines(const ReportInputs& in) {
  std::string out;
  if (in.frameworks && !in.frameworks->lines_not_read.empty()) {
    out += "log format: the trainer prints " + in.frameworks->lines_not_read +
           "; the probe's steps (and its loss: the values backward() ran on) stand in\n";
  } else if (!in.logs.not_per_step.empty()) {
    out += "log format: the trainer prints " + in.logs.not_per_step +
           ", not one line an optimizer step; the probe's steps (and its loss: the values "
           "backward() ran on) stand in\n";
  } else if (in.logs.format == logs::LogFormat::kAuto) {
    out +=
        "log format: none of the trainer's lines carries a loss the tool reads; the probe's "
        "loss (the values backward() ran on) stands in\n";
  } else if (in.logs.format == logs::LogFormat::kRegex) {
    out += fmt::format(
        "log format: no built-in format reads the step lines of {}; "
        "[logs.fields] proposed from\n    {}\n",
        in.logs.format_source, in.logs.example);
  } else {
    out += fmt::format("log format: {} (in {})\n    {}\n", logs::format_name(in.logs.format),
                       in.logs.format_source, in.logs.example);
  }
  if (!in.logs.merged.field_sources.empty()) {
    std::vector<std::string> sources;
    for (const auto& [field, source] : in.logs.merged.field_sources)
      sources.push_back(field + ": " + source);
    out += fmt::format("fields: {}\n", fmt::join(sources, "; "));
  }
  return out;
}

// The run settings the gates set and the environment variable that carries each one.
struct HandedSetting {
  ArgumentRole role;
  const char* name;
  const char* flag;
  const char* variable;
};
constexpr HandedSetting kHanded[] = {
    {ArgumentRole::kSeed, "seed", "--seed", "BIGMAC_TRAIN_SEED"},
    {ArgumentRole::kMicroBatchSize, "micro_batch_size", "--micro-batch-size",
     "BIGMAC_TRAIN_MICRO_BATCH_SIZE"},
    {ArgumentRole::kGradAccum, "gradient_accumulation_steps", "--grad-accum",
     "BIGMAC_TRAIN_GRADIENT_ACCUMULATION_STEPS"},
    {ArgumentRole::kLr, "lr", "--lr", "BIGMAC_TRAIN_LR"},
};

std::string argument_lines(const ReportInputs& in) {
  std::string out = "arguments the gates will set:\n";
  if (in.arguments.empty()) out += "  none recognised\n";
  for (const RecognisedArgument& a : in.arguments) {
    out += fmt::format("  {} -> {}", shown_argument(a), placeholder_of(a));
    if (a.role == ArgumentRole::kConfig) out += " (each gate's configuration file)";
    if (a.role == ArgumentRole::kCheckpointPath)
      out += " (each gate starts fresh in its own folder)";
    out += "\n";
  }
  // A framework's variables hand over what its program leaves at the default.
  std::vector<std::string> by_variable;
  if (in.frameworks) {
    for (const auto& [name, variable] : in.frameworks->env) {
      out += fmt::format("  {} (environment) -> {}\n", name, variable.value);
      by_variable.push_back(variable.value);
    }
  }
  if (!in.user_config.empty()) return out;
  for (const HandedSetting& h : kHanded) {
    const bool given = std::any_of(in.arguments.begin(), in.arguments.end(),
                                   [&](const RecognisedArgument& a) { return a.role == h.role; });
    if (given ||
        std::find(by_variable.begin(), by_variable.end(), placeholder(h.role)) != by_variable.end())
      continue;
    out += fmt::format(
        "  missing: no flag hands over train.{}; the gates cannot change it. Add a flag "
        "(`{}`) or read ${}\n",
        h.name, h.flag, h.variable);
  }
  return out;
}

// What the trials measured of the program, each with its evidence.
std::string model_lines(const ProgramModel& m) {
  std::string out = "what the trials measured:\n";
  if (!m.steps_evidence.empty()) out += "  steps: " + m.steps_evidence + "\n";
  if (!m.distributed_evidence.empty()) {
    out += fmt::format("  {}: {}\n", m.distributed ? "distributed" : "not distributed",
                       m.distributed_evidence);
  }
  if (m.second_trial) {
    out += "  two processes (ranks 0 and 1 of 2, the same flags):\n";
    if (!m.batch_evidence.empty()) out += "    batch: " + m.batch_evidence + "\n";
    if (!m.accum_evidence.empty()) out += "    accumulation: " + m.accum_evidence + "\n";
    out += m.printing_ranks.empty()
               ? "    prints: no rank printed a step line of its own (the probe's stand in)\n"
               : fmt::format("    prints: rank{} {} print{} step lines\n",
                             m.printing_ranks.size() == 1 ? "" : "s",
                             fmt::join(m.printing_ranks, ", "),
                             m.printing_ranks.size() == 1 ? "s" : "");
    out += m.stages ? "    stages: " + m.stages_evidence + "\n"
                    : "    stages: none (no tensor sent point to point)\n";
    for (const std::string& path : m.resumed) {
      out += fmt::format(
          "    resumes: the second trial loaded {}, which the first one wrote: drafted into "
          "trainer.fresh_paths, so each gate sets it aside before its ranks start and puts it "
          "back after (the file the trials left there stays as it is)\n",
          path);
    }
  } else if (!m.second_trial_problem.empty()) {
    out += "  two processes: " + m.second_trial_problem + "\n";
  }
  return out;
}

// The launcher the command started with, which every gate runs with its own layout.
std::string launcher_lines(const LauncherPrefix* prefix) {
  if (!prefix) return "";
  std::string out = fmt::format(
      "launcher: {} launch, which every gate runs with its own processes (launch.launcher = "
      "\"{}\"); the trials ran the program itself: {}\n",
      prefix->launcher, prefix->launcher, shown(prefix->program));
  if (!prefix->config_file.empty()) out += "  kept: --config_file " + prefix->config_file + "\n";
  if (!prefix->extra_args.empty()) out += "  kept: " + shown(prefix->extra_args) + "\n";
  if (!prefix->dropped.empty())
    out += "  set by each gate instead: " + shown(prefix->dropped) + "\n";
  return out;
}

// What the frameworks decided (docs/frameworks.md), each a line.
std::string framework_lines(const FrameworkModel* frameworks) {
  if (!frameworks || frameworks->notes.empty()) return "";
  std::string out = "frameworks:\n";
  for (const std::string& note : frameworks->notes) out += "  " + note + "\n";
  return out;
}

}  // namespace

std::string adoption_report(const ReportInputs& in) {
  std::string out = launcher_lines(in.launcher_prefix) + trial_line(in) + format_lines(in) +
                    model_lines(in.model) + framework_lines(in.frameworks) + argument_lines(in);
  out +=
      "gates (judged from the trial's logs; pipeline events such as layout, mb and the probe's "
      "point-to-point shapes appear only when the trainer runs stages):\n";
  out += format_outlook(in.outlook);
  if (!in.kept_folder.empty()) out += "the trial's output: " + in.kept_folder + "\n";
  return out;
}

}  // namespace bigmac::adopt
