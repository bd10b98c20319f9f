#pragma once

#include <memory>
#include <string>

#include "config/config.h"
#include "trainer/fault_plan.h"
#include "trainer/log_writer.h"
#include "trainer/rank_env.h"

namespace bigmac::trainer {

/// Everything a run needs, checked before anything touches the network.
struct TrainerSetup {
  config::Config config;
  RankEnv env;  ///< after the world_size_offset / master_port_offset faults
  FaultPlan faults;
  std::string log_file;          ///< empty = stdout; checkpoints go beside it unless configured
  std::string device = "cpu";    ///< cpu | cuda:<local_rank>
  std::string backend = "none";  ///< none (one process, no group) | gloo | nccl
};

/// The training loop of bigmac-train in named phases: init_distributed, build_model,
/// train_step (per step), close. Runtime failures (a peer vanished, rendezvous timed out) are
/// thrown and become exit code 1 at the top.
class Trainer {
 public:
  Trainer(TrainerSetup setup, LogWriter& log);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// All phases; returns after the `done` event.
  void run();

 private:
  void run_phases();
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace bigmac::trainer
