#include "adopt/launcher_prefix.h"

#include <algorithm>
#include <filesystem>
#include <string_view>

namespace bigmac::adopt {
namespace {

// `accelerate launch`'s options that take no value (its parser's nargs=0 actions, 1.15), in the
// underscore spelling; it accepts dashes too.
constexpr std::string_view kSwitches[] = {"--cpu",
                                          "--debug",
                                          "--downcast_bf16",
                                          "--dynamo_use_dynamic",
                                          "--dynamo_use_fullgraph",
                                          "--dynamo_use_regional_compilation",
                                          "--enable_cpu_affinity",
                                          "--fp8_use_autocast_during_eval",
                                          "--help",
                                          "--multi_gpu",
                                          "--no_tpu_cluster",
                                          "--quiet",
                                          "--same_network",
                                          "--tpu",
                                          "--tpu_cluster",
                                          "--tpu_use_sudo",
                                          "--use_deepspeed",
                                          "--use_fsdp",
                                          "--use_megatron_lm",
                                          "--use_parallelism_config",
                                          "-h",
                                          "-q"};

// What each gate's `accelerate launch` is given by the tool: the layout, the rendezvous, the
// log options and the device kind (launch/launcher_commands.h).
constexpr std::string_view kSetByGate[] = {"--num_processes",
                                           "--num_machines",
                                           "--machine_rank",
                                           "--main_process_ip",
                                           "--main_process_port",
                                           "--multi_gpu",
                                           "--cpu",
                                           "--tee",
                                           "-t",
                                           "--log_dir",
                                           "--max_restarts",
                                           "--monitor_interval"};

template <std::size_t N>
bool listed(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

// `--main-process-port` as `--main_process_port`: the name without `=value`, underscores only.
std::string option_name(const std::string& word) {
  std::string name = word.substr(0, word.find('='));
  if (name.rfind("--", 0) == 0) std::replace(name.begin() + 2, name.end(), '-', '_');
  return name;
}

bool is_accelerate(const std::string& program) {
  return std::filesystem::path(program).filename() == "accelerate";
}

}  // namespace

std::optional<LauncherPrefix> strip_launcher(const std::vector<std::string>& command,
                                             std::string (*interpreter_of)(const std::string&)) {
  // `accelerate launch ...`, or `PYTHON -m accelerate.commands.launch ...`.
  std::size_t at = 0;
  std::string python;
  if (command.size() > 2 && is_accelerate(command[0]) && command[1] == "launch") {
    python = interpreter_of(command[0]);
    at = 2;
  } else if (command.size() > 3 && command[1] == "-m" &&
             (command[2] == "accelerate.commands.launch" ||
              command[2] == "accelerate.commands.accelerate_cli")) {
    python = command[0];
    at = command[2] == "accelerate.commands.launch" ? 3 : 4;
    if (at == 4 && command[3] != "launch") return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (python.empty()) return std::nullopt;
  LauncherPrefix prefix;
  prefix.launcher = "accelerate";
  bool module = false;
  while (at < command.size()) {
    const std::string& word = command[at];
    if (word.empty() || word.front() != '-') break;  // the script
    const std::string name = option_name(word);
    if (name == "-m" || name == "--module") {
      module = true;
      ++at;
      break;
    }
    const bool joined = word.find('=') != std::string::npos;
    const bool takes_value = !joined && !listed(kSwitches, name) && at + 1 < command.size();
    std::vector<std::string> words = {word};
    if (takes_value) words.push_back(command[at + 1]);
    at += words.size();
    if (name == "--config_file") {
      prefix.config_file = joined ? word.substr(word.find('=') + 1) : words.back();
    } else if (listed(kSetByGate, name)) {
      prefix.dropped.insert(prefix.dropped.end(), words.begin(), words.end());
    } else if (name == "--no_python") {
      return std::nullopt;  // a program that is no Python script: not adopted through accelerate
    } else {
      prefix.extra_args.insert(prefix.extra_args.end(), words.begin(), words.end());
    }
  }
  if (at >= command.size()) return std::nullopt;
  prefix.program = {python};
  if (module) prefix.program.push_back("-m");
  prefix.program.insert(prefix.program.end(), command.begin() + static_cast<std::ptrdiff_t>(at),
                        command.end());
  return prefix;
}

}  // namespace bigmac::adopt
