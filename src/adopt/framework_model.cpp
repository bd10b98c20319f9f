#include "adopt/framework_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "core/json_file.h"

namespace bigmac::adopt {
namespace {

std::string text_of(const nlohmann::json& e, const char* key) {
  if (!e.contains(key)) return "?";
  const nlohmann::json& v = e.at(key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "?";
  // TrainingArguments keeps logging_steps as a float: 1.0 is 1.
  if (v.is_number_float() &&
      v.get<double>() == static_cast<double>(static_cast<std::int64_t>(v.get<double>())))
    return std::to_string(static_cast<std::int64_t>(v.get<double>()));
  return json_text(v);
}

std::int64_t int_of(const nlohmann::json& e, const char* key, std::int64_t otherwise = 0) {
  return e.contains(key) && e.at(key).is_number_integer() ? e.at(key).get<std::int64_t>()
                                                          : otherwise;
}

bool given(const nlohmann::json& e, const std::string& argument) {
  if (!e.contains("given") || !e.at("given").is_array()) return false;
  for (const nlohmann::json& g : e.at("given")) {
    if (g.is_string() && g.get<std::string>() == argument) return true;
  }
  return false;
}

bool has_role(const std::vector<RecognisedArgument>& arguments, ArgumentRole role) {
  return std::any_of(arguments.begin(), arguments.end(),
                     [role](const RecognisedArgument& a) { return a.role == role; });
}

// transformers 5 prints `{'loss': '4.717', ...}`: each value a string, rounded to 4 digits.
bool rounded_dict(const std::string& line) {
  for (std::size_t at = line.find(": '"); at != std::string::npos; at = line.find(": '", at + 1)) {
    const char next = at + 3 < line.size() ? line[at + 3] : '\0';
    if ((next >= '0' && next <= '9') || next == '-') return true;
  }
  return false;
}

void model_transformers(const nlohmann::json& e, const TrialLogs& logs, FrameworkModel& model) {
  model.notes.push_back(fmt::format(
      "transformers {} {}: per_device_train_batch_size {} × gradient_accumulation_steps {} × "
      "world size {} = {} samples a step (its TrainingArguments); its state.global_step counts "
      "optimizer steps from 1, so the probe's step k is its k + 1",
      text_of(e, "version"), text_of(e, "object"), text_of(e, "per_device_train_batch_size"),
      text_of(e, "gradient_accumulation_steps"), text_of(e, "world_size"),
      text_of(e, "samples_per_step")));
  if (logs.format != logs::LogFormat::kPythonDict) return;
  model.lines_not_read = fmt::format(
      "the Trainer's log dicts, which carry no step number (one every logging_steps = {} "
      "steps){}",
      text_of(e, "logging_steps"),
      rounded_dict(logs.example) ? " and print each value rounded to 4 significant digits, "
                                   "coarser than the gates' tolerances"
                                 : "");
}

void model_accelerate(const nlohmann::json& e, FrameworkModel& model) {
  const std::int64_t accum = int_of(e, "gradient_accumulation_steps", 1);
  model.notes.push_back(fmt::format(
      "accelerate {} Accelerator: {} process{} ({}), gradient_accumulation_steps {}{}",
      text_of(e, "version"), text_of(e, "num_processes"),
      int_of(e, "num_processes", 1) == 1 ? "" : "es", text_of(e, "distributed_type"), accum,
      accum > 1 ? fmt::format(" (its optimizer wrapper steps the optimizer every {} calls: "
                              "those are the steps counted)",
                              accum)
                : ""));
}

// accelerate steps a prepared scheduler num_processes times per optimizer step unless it
// splits batches: its schedule assumes each process's batch grew with the processes.
void model_accelerated_scheduler(const nlohmann::json& e, FrameworkModel& model) {
  const bool once = e.value("split_batches", false) || !e.value("step_with_optimizer", true);
  if (once) return;
  model.notes.push_back(fmt::format(
      "accelerate {} steps the {} given to prepare() num_processes times per optimizer step "
      "(split_batches False): its schedule counts one process's steps, so at a gate that keeps "
      "the samples per step with fewer accumulation steps it runs dp times faster than the "
      "baseline's, and the gate's lr check says so; stepping it yourself once per optimizer "
      "step (when accelerator.sync_gradients) keeps the baseline's",
      text_of(e, "version"), text_of(e, "scheduler")));
}

void model_lightning(const nlohmann::json& e, const std::vector<RecognisedArgument>& arguments,
                     const TrialLogs& logs, FrameworkModel& model) {
  const std::string version = text_of(e, "version");
  model.notes.push_back(fmt::format(
      "Lightning {} Trainer: devices {} × num_nodes {} ({}), accumulate_grad_batches {}; "
      "trainer.global_step counts optimizer steps from 0 (a closure step is one step, whatever "
      "it runs inside)",
      version, text_of(e, "devices"), text_of(e, "num_nodes"), text_of(e, "strategy"),
      text_of(e, "accumulate_grad_batches")));
  // A Trainer argument the program leaves at its default comes from PL_TRAINER_<NAME>
  // (Lightning's _defaults_from_env_vars); one it passes itself wins over the variable.
  const bool devices_flag = has_role(arguments, ArgumentRole::kDevices);
  const bool nodes_flag = has_role(arguments, ArgumentRole::kNodes);
  if (!given(e, "devices") && !devices_flag) {
    model.env["PL_TRAINER_DEVICES"] = {
        "{nproc_per_node}",
        fmt::format("the program leaves Lightning's devices at its default (\"auto\": {} in "
                    "the trial): each gate's processes per node, so that its strategy runs in "
                    "the launcher's processes",
                    text_of(e, "devices"))};
    model.second_trial_env["PL_TRAINER_DEVICES"] = "2";
    model.distributes = true;
    model.distributes_evidence = fmt::format(
        "Lightning's Trainer ran devices {} × num_nodes {} ({}) in the first trial, no process "
        "group; given the launcher's processes (PL_TRAINER_DEVICES) its strategy forms one",
        text_of(e, "devices"), text_of(e, "num_nodes"), text_of(e, "strategy"));
  } else if (!devices_flag) {
    model.notes.push_back(fmt::format(
        "Lightning's Trainer is given devices={} in the program: under a launcher of N "
        "processes it runs N separate trainings of {} device(s) each; take devices from a flag "
        "(adopt hands it each gate's processes) or leave it to its default",
        text_of(e, "devices"), text_of(e, "devices")));
  }
  if (!given(e, "num_nodes") && !nodes_flag) {
    model.env["PL_TRAINER_NUM_NODES"] = {"{nnodes}",
                                         "Lightning's num_nodes, left at its default: each "
                                         "gate's nodes"};
    model.second_trial_env["PL_TRAINER_NUM_NODES"] = "1";
  }
  if (!given(e, "accumulate_grad_batches") && !has_role(arguments, ArgumentRole::kGradAccum)) {
    model.env["PL_TRAINER_ACCUMULATE_GRAD_BATCHES"] = {
        "{grad_accum}",
        fmt::format("the program leaves Lightning's accumulate_grad_batches at its default ({} "
                    "in the trial): the gates' accumulation",
                    text_of(e, "accumulate_grad_batches"))};
    model.second_trial_env["PL_TRAINER_ACCUMULATE_GRAD_BATCHES"] =
        std::to_string(int_of(e, "accumulate_grad_batches", 1));
  }
  // Its progress bar redraws one line (a running loss) instead of printing one a step.
  if (logs.format != logs::LogFormat::kBigmac && !logs.trainer.steps.empty() &&
      logs.trainer.steps.size() < logs.probe.steps.size()) {
    model.lines_not_read = fmt::format(
        "{} line{} with a loss for {} optimizer steps (Lightning's progress bar shows a running "
        "value, redrawn in place), which cannot be matched to steps",
        logs.trainer.steps.size(), logs.trainer.steps.size() == 1 ? "" : "s",
        logs.probe.steps.size());
  }
}

}  // namespace

std::vector<nlohmann::json> read_framework_events(const std::filesystem::path& probe_log) {
  std::vector<nlohmann::json> out;
  std::ifstream in(probe_log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find("\"framework\"") == std::string::npos) continue;
    nlohmann::json e = nlohmann::json::parse(line, nullptr, false);
    if (e.is_object() && e.value("ev", "") == "framework") out.push_back(std::move(e));
  }
  return out;
}

FrameworkModel model_frameworks(const std::vector<nlohmann::json>& events,
                                const std::vector<RecognisedArgument>& arguments,
                                const TrialLogs& logs) {
  FrameworkModel model;
  auto seen = [&](const std::string& name) {
    return std::find(model.names.begin(), model.names.end(), name) != model.names.end();
  };
  for (const nlohmann::json& e : events) {
    const std::string name = e.value("framework", "");
    if (name.empty() || seen(name)) continue;
    model.names.push_back(name);
  }
  for (const nlohmann::json& e : events) {
    const std::string name = e.value("framework", "");
    if (name == "transformers") model_transformers(e, logs, model);
    if (name == "lightning") model_lightning(e, arguments, logs, model);
    // The Trainer's own Accelerator does not accumulate (the Trainer does): only one the
    // program built itself says something of the program.
    if (name == "accelerate" && !seen("transformers")) {
      if (e.value("object", "") == "AcceleratedScheduler") {
        model_accelerated_scheduler(e, model);
      } else {
        model_accelerate(e, model);
      }
    }
  }
  return model;
}

void check_second_trial(const std::vector<std::vector<nlohmann::json>>& ranks,
                        FrameworkModel& model) {
  for (const std::vector<nlohmann::json>& events : ranks) {
    for (const nlohmann::json& e : events) {
      const std::string name = e.value("framework", "");
      const std::int64_t launched = int_of(e, "launcher_world_size", int_of(e, "world_size"));
      const std::int64_t joined =
          name == "lightning" ? int_of(e, "planned_world_size") : int_of(e, "num_processes");
      if (launched < 2 || joined < 1 || joined >= launched) continue;
      std::string why =
          name == "lightning"
              ? "its devices × num_nodes must be the launcher's processes"
              : "on a host without GPUs accelerate needs cpu=True (the Trainer's --use_cpu, "
                "accelerate's Accelerator(cpu=True) or ACCELERATE_USE_CPU=true)";
      model.notes.push_back(fmt::format(
          "in the two processes each {} {} joined {} process{} ({}) of the launcher's {}: "
          "each rank trained alone; {}",
          name, text_of(e, "object"), joined, joined == 1 ? "" : "es",
          name == "lightning" ? text_of(e, "strategy") : text_of(e, "distributed_type"), launched,
          why));
      return;
    }
  }
}

}  // namespace bigmac::adopt
