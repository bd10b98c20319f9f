#include "trainer/rank_env.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>
#include <string_view>

namespace bigmac::trainer {
namespace {

Error variable_error(std::string_view name, std::string_view text, std::string_view expected) {
  Error error =
      make_error(ErrorKind::kUsage, fmt::format("${}=\"{}\" is not {}", name, text, expected));
  error.key = std::string(name);
  return error;
}

/// The integer in variable `name`, nullopt when unset; an error when set but not an integer.
Expected<std::optional<int>> read_int(const std::function<const char*(const char*)>& getenv,
                                      const char* name) {
  const char* text = getenv(name);
  if (text == nullptr) return std::optional<int>{};
  std::string_view view(text);
  int value = 0;
  auto [ptr, ec] = std::from_chars(view.data(), view.data() + view.size(), value);
  if (view.empty() || ec != std::errc() || ptr != view.data() + view.size() || value < 0) {
    return tl::unexpected(variable_error(name, view, "a non-negative integer"));
  }
  return std::optional<int>(value);
}

}  // namespace

Expected<RankEnv> read_rank_env(const std::function<const char*(const char*)>& getenv,
                                const config::LaunchConfig& launch) {
  RankEnv env;
  env.master_addr = launch.master_addr;
  // 0 (the orchestrator picks a free port per gate and hands it over in MASTER_PORT): a rank
  // started without one uses torchrun's default.
  env.master_port = launch.master_port != 0 ? launch.master_port : kTorchrunDefaultPort;

  std::optional<int> rank, world, local, port, procid, ntasks, localid;
  struct Wanted {
    const char* name;
    std::optional<int>* into;
  };
  for (Wanted wanted :
       {Wanted{"RANK", &rank}, Wanted{"WORLD_SIZE", &world}, Wanted{"LOCAL_RANK", &local},
        Wanted{"MASTER_PORT", &port}, Wanted{"SLURM_PROCID", &procid},
        Wanted{"SLURM_NTASKS", &ntasks}, Wanted{"SLURM_LOCALID", &localid}}) {
    auto parsed = read_int(getenv, wanted.name);
    if (!parsed) return tl::unexpected(parsed.error());
    *wanted.into = *parsed;
  }
  if (rank || world) {
    if (!rank || !world) {
      return tl::unexpected(make_error(ErrorKind::kUsage,
                                       "RANK and WORLD_SIZE must be set together",
                                       "launch with torchrun or set both variables"));
    }
    env.source = "torchrun";
    env.rank = *rank;
    env.world_size = *world;
    env.local_rank = local.value_or(env.rank);
  } else if (procid && ntasks) {
    env.source = "slurm";
    env.rank = *procid;
    env.world_size = *ntasks;
    env.local_rank = localid.value_or(0);
  }
  if (env.world_size < 1 || env.rank >= env.world_size) {
    return tl::unexpected(
        make_error(ErrorKind::kUsage,
                   fmt::format("rank {} is outside world size {}", env.rank, env.world_size)));
  }
  if (const char* addr = getenv("MASTER_ADDR"); addr != nullptr && *addr != '\0') {
    env.master_addr = addr;
  }
  if (port) env.master_port = *port;
  if (env.master_port > 65535) {
    return tl::unexpected(
        variable_error("MASTER_PORT", std::to_string(env.master_port), "a port number (0-65535)"));
  }
  if (const char* agent = getenv("TORCHELASTIC_USE_AGENT_STORE"); agent != nullptr) {
    env.agent_store = std::string_view(agent) == "True";
  }
  if (const char* restarts = getenv("TORCHELASTIC_RESTART_COUNT"); restarts != nullptr) {
    env.restart_count = restarts;
  }
  return env;
}

}  // namespace bigmac::trainer
