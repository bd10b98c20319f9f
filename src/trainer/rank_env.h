#pragma once

#include <functional>
#include <string>

#include "config/config.h"
#include "core/error.h"

namespace bigmac::trainer {

/// The port a rank uses when neither MASTER_PORT nor launch.master_port names one.
inline constexpr int kTorchrunDefaultPort = 29500;

/// Who this process is in the job, from the launcher's environment: torchrun's RANK,
/// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, else Slurm's SLURM_PROCID, SLURM_NTASKS,
/// SLURM_LOCALID, else a single process.
struct RankEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = kTorchrunDefaultPort;
  std::string source = "none";  ///< torchrun | slurm | none
  /// torchrun's agent already serves the TCPStore on MASTER_PORT; workers join as clients
  /// under the prefix /worker/attempt_<restart_count> (TORCHELASTIC_USE_AGENT_STORE=True).
  bool agent_store = false;
  std::string restart_count = "0";
};

/// Reads the environment through `getenv` (tests pass a map). MASTER_ADDR/MASTER_PORT default to
/// `launch.master_addr` / `launch.master_port` (Slurm does not set them). Errors name the
/// variable and the text found.
Expected<RankEnv> read_rank_env(const std::function<const char*(const char*)>& getenv,
                                const config::LaunchConfig& launch);

}  // namespace bigmac::trainer
