#pragma once

#include "core/error.h"
#include "trainer/trainer.h"

namespace bigmac::trainer {

/// Turns a loaded configuration and the rank environment into a TrainerSetup, or the reasons it
/// cannot run (exit 2: unsupported layout or dtype; exit 3: the device or backend is missing).
/// Applies the world_size_offset / master_port_offset faults to the environment it is given.
/// A single process forms no process group (backend "none") unless `form_group` asks for one.
tl::expected<TrainerSetup, Errors> make_setup(config::Config config, RankEnv env,
                                              std::string log_file, bool form_group = false);

/// The whole program: options, configuration, setup, training. Returns the exit code.
int run_main(int argc, char** argv);

}  // namespace bigmac::trainer
