#include "trainer/trainer_main.h"

#include <fmt/format.h>
#include <torch/version.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "trainer/device_support.h"
#include "trainer/layer_split.h"
#include "trainer/train_options.h"

#ifndef BIGMAC_VERSION
#define BIGMAC_VERSION "0.0.0"
#endif

namespace bigmac::trainer {
namespace {

Error config_error(std::string key, std::string message, std::string hint = {}) {
  Error error = make_error(ErrorKind::kConfig, std::move(message), std::move(hint));
  error.key = std::move(key);
  return error;
}

int print_errors(const Errors& errors) {
  for (const Error& error : errors) {
    std::fprintf(stderr, "bigmac-train: error: %s\n", error.format().c_str());
  }
  return to_int(exit_code_for(errors));
}

}  // namespace

tl::expected<TrainerSetup, Errors> make_setup(config::Config config, RankEnv env,
                                              std::string log_file, bool form_group) {
  Errors errors;
  auto faults = parse_fault_plan(config.faults);
  if (!faults) errors.push_back(faults.error());

  const int pp = config.parallel.pp_size;
  if (pp < 1 || env.world_size % pp != 0) {
    errors.push_back(config_error(
        "parallel.pp_size",
        fmt::format("world size {} is not a multiple of pp_size {}", env.world_size, pp)));
  }
  if (pp > 1) {
    if (config.faults.split_out_of_range && !config.model.split_points.empty()) {
      // The fault: the last cut at num_layers, so the last stage owns no layer. It skips the
      // split check on purpose, as a trainer without one would.
      config.model.split_points.back() = config.model.num_layers;
    } else {
      auto split = check_split_points(config.model.num_layers, pp, config.model.split_points);
      if (!split) errors.push_back(split.error());
    }
    if (config.parallel.schedule != "1f1b" && config.parallel.schedule != "gpipe") {
      errors.push_back(config_error("parallel.schedule", fmt::format("\"{}\" is not 1f1b or gpipe",
                                                                     config.parallel.schedule)));
    }
  }
  if (config.parallel.tp_size != 1) {
    errors.push_back(
        config_error("parallel.tp_size",
                     fmt::format("tp_size is {}; bigmac-train has no tensor parallelism",
                                 config.parallel.tp_size),
                     "set parallel.tp_size = 1"));
  }
  if (config.train.dtype != "float32" && config.train.dtype != "float64") {
    errors.push_back(config_error("train.dtype",
                                  fmt::format("dtype \"{}\" is not supported", config.train.dtype),
                                  "use float32 or float64"));
  }
  if (config.train.micro_batch_size < 1 || config.train.gradient_accumulation_steps < 1 ||
      config.train.seq_length < 1 || config.train.max_steps < 0) {
    errors.push_back(config_error("train",
                                  "micro_batch_size, gradient_accumulation_steps and "
                                  "seq_length must be at least 1, max_steps at least 0"));
  }
  if (config.model.hidden % std::max(1, config.model.heads) != 0 || config.model.vocab < 4) {
    errors.push_back(config_error(
        "model.hidden", fmt::format("hidden {} must be a multiple of heads {} and vocab {} >= 4",
                                    config.model.hidden, config.model.heads, config.model.vocab)));
  }

  TrainerSetup setup;
  if (faults) {
    setup.faults = *faults;
    env.world_size += faults->world_size_offset;
    env.master_port += faults->port_offset_for(env.rank);
  }

  std::string devices = config.launch.devices;
  bool cuda = devices == "cuda" || (devices == "auto" && cuda_available());
  if (devices != "cpu" && devices != "cuda" && devices != "auto") {
    errors.push_back(
        config_error("launch.devices", fmt::format("\"{}\" is not cpu, cuda or auto", devices)));
  } else if (cuda && !cuda_available()) {
    errors.push_back(make_error(ErrorKind::kInfrastructure,
                                "launch.devices = \"cuda\" but this LibTorch sees no CUDA device",
                                "use devices = \"cpu\" or a CUDA build of LibTorch"));
  }
  setup.device = cuda ? fmt::format("cuda:{}", env.local_rank) : "cpu";

  const std::string& backend = config.launch.backend;
  if (backend != "auto" && backend != "gloo" && backend != "nccl") {
    errors.push_back(
        config_error("launch.backend", fmt::format("\"{}\" is not auto, gloo or nccl", backend)));
  } else if (env.world_size == 1 && env.rank == 0 && !form_group) {
    setup.backend = "none";
  } else if (backend == "nccl" || (backend == "auto" && cuda && nccl_compiled())) {
    if (!nccl_compiled()) {
      errors.push_back(make_error(ErrorKind::kInfrastructure,
                                  "launch.backend = \"nccl\" but this bigmac-train was built "
                                  "against a LibTorch without NCCL",
                                  "use backend = \"gloo\" or build against a CUDA LibTorch"));
    }
    setup.backend = "nccl";
  } else {
    if (!gloo_compiled()) {
      errors.push_back(make_error(ErrorKind::kInfrastructure,
                                  "this bigmac-train was built without Gloo (LibTorch's Gloo "
                                  "headers were missing), so it cannot form a CPU process group",
                                  "build against a LibTorch with Gloo headers (libgloo-dev)"));
    }
    setup.backend = "gloo";
  }
  if (!errors.empty()) return tl::unexpected(errors);
  setup.config = std::move(config);
  setup.env = std::move(env);
  setup.log_file = std::move(log_file);
  return setup;
}

int run_main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto options = parse_train_options(args);
  if (!options) return print_errors({options.error()});
  if (options->help) {
    std::fputs(train_usage().c_str(), stdout);
    return 0;
  }
  if (options->version) {
    // The second line tells which LibTorch this build compiled against and what it can run:
    // a build against a wheel's LibTorch without Gloo's headers has no CPU process groups.
    std::printf("bigmac-train %s\nLibTorch %s, process groups: %s\n", BIGMAC_VERSION, TORCH_VERSION,
                compiled_backends().c_str());
    return 0;
  }
  auto config = config::load_config(
      config::ConfigSources{options->config_file, options->overrides, config::read_env()});
  if (!config) return print_errors(config.error());
  auto env = read_rank_env([](const char* name) { return std::getenv(name); }, config->launch);
  if (!env) return print_errors({env.error()});
  // "{rank}" in the log path gives each rank its own file under launchers (torchrun) that pass
  // every rank the same argv.
  std::string log_file = options->log_file;
  for (auto at = log_file.find("{rank}"); at != std::string::npos; at = log_file.find("{rank}")) {
    log_file.replace(at, 6, std::to_string(env->rank));
  }
  auto setup = make_setup(std::move(*config), std::move(*env), log_file, options->form_group);
  if (!setup) return print_errors(setup.error());

  auto log = LogWriter::open(setup->log_file, setup->env.rank);
  if (!log) return print_errors({log.error()});
  const int rank = setup->env.rank;
  try {
    Trainer trainer(std::move(*setup), *log);
    trainer.run();
  } catch (const std::exception& error) {
    // A runtime failure (peer gone, rendezvous timeout): the text goes to stderr, where the
    // orchestrator reads it as context for the diagnosis.
    std::fprintf(stderr, "bigmac-train: rank %d: error: %s\n", rank, error.what());
    return 1;
  }
  return 0;
}

}  // namespace bigmac::trainer
