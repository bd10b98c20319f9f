#include "report/attempt_logs.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <system_error>

namespace bigmac::report {
namespace fs = std::filesystem;

namespace {

/// One rank's files in an attempt folder.
struct RankFiles {
  std::string log;                  ///< rank<N>.log
  std::vector<std::string> output;  ///< rank<N>.stdout, rank<N>.stderr
};

/// rank<N>.log/.stdout/.stderr by rank number, so that rank10 follows rank9.
std::map<int, RankFiles> rank_files(const fs::path& dir) {
  std::map<int, RankFiles> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string ext = entry.path().extension().string();
    if (!name.starts_with("rank")) continue;
    const int rank = logs::rank_from_path(name);
    if (rank < 0) continue;
    if (ext == ".log") {
      found[rank].log = entry.path().string();
    } else if (ext == ".stdout" || ext == ".stderr") {
      found[rank].output.push_back(entry.path().string());
    }
  }
  for (auto& [rank, files] : found) std::sort(files.output.begin(), files.output.end());
  return found;
}

}  // namespace

Expected<std::vector<logs::RankLog>> read_attempt_logs(const fs::path& dir,
                                                       const logs::ParserOptions& parser) {
  std::vector<logs::RankLog> out;
  for (const auto& [rank, files] : rank_files(dir)) {
    std::optional<logs::RankLog> chosen;
    if (!files.log.empty()) {
      auto loaded = logs::load_logs({files.log}, parser);
      if (!loaded) return tl::unexpected(loaded.error());
      if (const logs::RankLog* r = loaded->find(rank); r && r->records > 0) chosen = *r;
    }
    if (!chosen && !files.output.empty()) {
      auto loaded = logs::load_logs(files.output, parser);
      if (!loaded) return tl::unexpected(loaded.error());
      if (const logs::RankLog* r = loaded->find(rank)) chosen = *r;
    }
    if (chosen) out.push_back(std::move(*chosen));
  }
  return out;
}

}  // namespace bigmac::report
