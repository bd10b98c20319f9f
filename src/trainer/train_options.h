#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/error.h"

namespace bigmac::trainer {

/// The command line of bigmac-train. `--seed N` and `--max-steps N` are shorthands that become
/// the overrides `train.seed=N` / `train.max_steps=N` in command-line order, so the config
/// loader records their provenance like any `--set`.
struct TrainOptions {
  std::optional<std::string> config_file;  ///< --config / -c
  std::vector<std::string> overrides;      ///< --set k=v (repeatable), --seed, --max-steps
  std::string log_file;                    ///< --log-file; empty or "-" = stdout
  /// --form-group: form the process group even with world size 1, so that one process runs the
  /// backend's collectives for real (a one-GPU check of the NCCL path).
  bool form_group = false;
  bool help = false;
  bool version = false;
};

/// Parses the arguments after the program name. Accepts `--opt value` and `--opt=value`.
Expected<TrainOptions> parse_train_options(std::span<const std::string> args);

/// The --help text.
std::string train_usage();

}  // namespace bigmac::trainer
