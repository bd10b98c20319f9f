#include "attempt/earlier_checkpoints.h"

#include <fmt/format.h>

#include <tuple>

#include "logs/rank_log.h"

namespace bigmac::attempt {
namespace fs = std::filesystem;

std::map<std::string, std::string> earlier_checkpoints(const fs::path& run_dir,
                                                       const fs::path& current) {
  // The last writer of each path: the latest attempt folder ("NN-" orders the gates), then the
  // latest step of that attempt.
  struct Writer {
    std::string folder, who;
    std::int64_t step = 0;
  };
  std::map<std::string, Writer> last;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(run_dir, ec)) {
    if (!entry.is_directory(ec) || entry.path() == current) continue;
    // Attempt folders are "NN-<gate>.<attempt>" (gates/run_directory.h).
    const std::string folder = entry.path().filename().string();
    const auto dash = folder.find('-');
    const auto dot = folder.rfind('.');
    if (dash == std::string::npos || dot == std::string::npos || dot < dash) continue;
    const std::string who = fmt::format(
        "gate {} (attempt {})", folder.substr(dash + 1, dot - dash - 1), folder.substr(dot + 1));
    for (const auto& file : fs::directory_iterator(entry.path(), ec)) {
      const std::string name = file.path().filename().string();
      if (name.rfind("probe-rank", 0) != 0 || file.path().extension() != ".jsonl") continue;
      auto logs =
          logs::load_logs({file.path().string()}, logs::ParserOptions(logs::LogFormat::kBigmac));
      if (!logs) continue;
      for (const logs::RankLog& rank : logs->ranks) {
        for (const logs::CheckpointRecord& c : rank.checkpoints) {
          auto [it, fresh] = last.try_emplace(c.path, Writer{folder, who, c.step});
          if (!fresh && std::tie(it->second.folder, it->second.step) < std::tie(folder, c.step)) {
            it->second = Writer{folder, who, c.step};
          }
        }
      }
    }
  }
  std::map<std::string, std::string> out;
  for (const auto& [path, w] : last) out.emplace(path, fmt::format("{}, step {}", w.who, w.step));
  return out;
}

}  // namespace bigmac::attempt
