#include "trainer/train_options.h"

#include <fmt/format.h>

namespace bigmac::trainer {
namespace {

Error usage_error(std::string message) {
  return make_error(ErrorKind::kUsage, std::move(message), "see bigmac-train --help");
}

}  // namespace

std::string train_usage() {
  return "usage: bigmac-train [options]\n"
         "\n"
         "The built-in reference trainer of bigmac-bringup: a small decoder-only transformer on\n"
         "seeded synthetic data: one process, data parallel, pipeline parallel (1f1b / gpipe) or\n"
         "both, ranks from the torchrun or Slurm environment.\n"
         "\n"
         "options:\n"
         "  -c, --config FILE   TOML configuration (default: built-in defaults)\n"
         "  --set KEY=VALUE     override one key, e.g. --set train.micro_batch_size=4 "
         "(repeatable)\n"
         "  --log-file PATH     bigmac-log v1 JSON lines (default: stdout); {rank} is replaced\n"
         "                      by the global rank\n"
         "  --seed N            same as --set train.seed=N\n"
         "  --max-steps N       same as --set train.max_steps=N\n"
         "  --form-group        form the process group even with world size 1, so that one\n"
         "                      process runs the backend's collectives (one-GPU NCCL check)\n"
         "  --version           print the version and exit\n"
         "  -h, --help          print this help and exit\n"
         "\n"
         "exit codes: 0 done, 1 training failed, 2 bad configuration or usage, 3 infrastructure\n";
}

Expected<TrainOptions> parse_train_options(std::span<const std::string> args) {
  TrainOptions options;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    std::optional<std::string> inline_value;
    if (arg.starts_with("--")) {
      if (auto eq = arg.find('='); eq != std::string::npos) {
        inline_value = arg.substr(eq + 1);
        arg.resize(eq);
      }
    }
    if (arg == "-h" || arg == "--help") {
      options.help = true;
      continue;
    }
    if (arg == "--version") {
      options.version = true;
      continue;
    }
    if (arg == "--form-group") {
      options.form_group = true;
      continue;
    }
    bool takes_value = arg == "-c" || arg == "--config" || arg == "--set" || arg == "--log-file" ||
                       arg == "--seed" || arg == "--max-steps";
    if (!takes_value) return tl::unexpected(usage_error(fmt::format("unknown option '{}'", arg)));
    std::string value;
    if (inline_value) {
      value = *inline_value;
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return tl::unexpected(usage_error(fmt::format("option '{}' needs a value", arg)));
    }
    if (arg == "-c" || arg == "--config") {
      options.config_file = value;
    } else if (arg == "--set") {
      if (value.find('=') == std::string::npos) {
        return tl::unexpected(
            usage_error(fmt::format("--set '{}' is not of the form key=value", value)));
      }
      options.overrides.push_back(value);
    } else if (arg == "--log-file") {
      options.log_file = value;
    } else if (arg == "--seed") {
      options.overrides.push_back("train.seed=" + value);
    } else {
      options.overrides.push_back("train.max_steps=" + value);
    }
  }
  return options;
}

}  // namespace bigmac::trainer
