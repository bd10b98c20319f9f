#include "launch/trainer_invocation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "config/schema.h"
#include "launch/launch_planner.h"

namespace bigmac::launch {

std::map<std::string, std::string> gate_placeholders(const config::Config& c,
                                                     const std::string& gate,
                                                     const std::filesystem::path& gate_file,
                                                     const std::filesystem::path& run_dir) {
  return {
      {"gate", gate},
      {"gate_config", gate_file.string()},
      {"pp", std::to_string(c.parallel.pp_size)},
      {"tp", std::to_string(c.parallel.tp_size)},
      {"dp", std::to_string(c.derived.dp)},
      // The program model says whose numbers these are: a global batch or a single-process
      // accumulation that the program divides by the world size itself is handed multiplied.
      {"micro_batch_size", std::to_string(std::int64_t{c.train.micro_batch_size} *
                                          (c.trainer.batch_scope == "global" ? c.derived.dp : 1))},
      {"grad_accum", std::to_string(std::int64_t{c.train.gradient_accumulation_steps} *
                                    (c.trainer.accum_scope == "divided" ? c.derived.dp : 1))},
      {"micro_batches", std::to_string(c.derived.micro_batches)},
      {"schedule", c.parallel.schedule},
      {"seq_length", std::to_string(c.train.seq_length)},
      {"seed", std::to_string(c.train.seed)},
      {"max_steps", std::to_string(std::max(0, c.train.max_steps - c.trainer.max_steps_offset))},
      {"lr", fmt::format("{}", c.train.lr)},
      {"num_layers", std::to_string(c.model.num_layers)},
      // The gate's layout, for a framework that must be told the processes it runs with
      // (Lightning's devices and num_nodes: docs/frameworks.md).
      {"nproc_per_node", std::to_string(c.launch.nproc_per_node)},
      {"nnodes", std::to_string(c.launch.nnodes)},
      {"split_points", fmt::format("{}", fmt::join(c.model.split_points, ","))},
      {"trace_shapes", c.trace.shapes ? "true" : "false"},
      {"run_dir", run_dir.string()},
      // The gate attempt's own folder: a checkpoint or output path under it is fresh for
      // every gate, so no gate resumes what an earlier one wrote.
      {"attempt_dir", gate_file.parent_path().string()},
  };
}

bool trainer_receives(const config::Config& c, std::string_view placeholder) {
  if (c.trainer.kind != "command") return true;
  const std::string token = "{" + std::string(placeholder) + "}";
  for (const std::string& arg : c.trainer.command) {
    if (arg.find("{gate_config}") != std::string::npos) return true;
    if (arg.find(token) != std::string::npos) return true;
  }
  // A framework's own variable (Lightning's PL_TRAINER_ACCUMULATE_GRAD_BATCHES) hands it too.
  for (const auto& [name, setting] : c.trainer_env) {
    const auto* value = std::get_if<std::string>(&setting.value);
    if (value && value->find(token) != std::string::npos) return true;
  }
  return false;
}

std::vector<std::string> command_placeholders() {
  std::vector<std::string> names = {"rank", "local_rank", "world_size", "log_file"};
  for (const auto& [name, value] : gate_placeholders(config::Config{}, {}, {}, {})) {
    names.push_back(name);
  }
  return names;
}

std::map<std::string, std::string> gate_environment(
    const config::Config& c, const std::map<std::string, std::string>& placeholders) {
  std::map<std::string, std::string> env;
  for (const auto& [name, value] : placeholders) {
    std::string var = "BIGMAC_" + name;
    std::transform(var.begin(), var.end(), var.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
    env[var] = value;
  }
  // Schema keys under their config names too; bigmac-train reads these as its environment
  // layer, with the same values its gate file holds.
  for (const config::SchemaEntry& entry : config::schema()) {
    if (entry.type == config::ValueType::kSplitPoints || entry.table == "faults") continue;
    const config::Value value = entry.get(c);
    std::string text = config::value_to_string(value);
    if (const auto* s = std::get_if<std::string>(&value)) text = *s;
    if (std::holds_alternative<std::vector<std::string>>(value)) continue;
    env[entry.env_name()] = text;
  }
  return env;
}

std::vector<std::string> trainer_argv(const config::Config& c,
                                      const std::filesystem::path& trainer_binary,
                                      const std::map<std::string, std::string>& placeholders) {
  if (c.trainer.kind == "builtin") {
    return {trainer_binary.string(), "--config", placeholders.at("gate_config"), "--log-file",
            "{log_file}"};
  }
  std::vector<std::string> argv;
  for (const std::string& arg : c.trainer.command) {
    argv.push_back(substitute(arg, placeholders));
  }
  return argv;
}

}  // namespace bigmac::launch
