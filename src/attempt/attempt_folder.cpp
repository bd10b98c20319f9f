#include "attempt/attempt_folder.h"

#include <fmt/format.h>

#include <set>
#include <string>
#include <system_error>

#include "attempt/attempt_watch.h"
#include "config/config.h"

namespace bigmac::attempt {
namespace fs = std::filesystem;
namespace {

// Appends `from`'s records to `into` (two stream files of one rank: stdout and stderr).
void append(logs::RankLog& into, logs::RankLog&& from) {
  if (into.records == 0 && into.sources.empty()) {
    into = std::move(from);
    return;
  }
  for (logs::Record& r : from.typed_records()) into.add(std::move(r));
  for (logs::CollectiveRecord& c : from.collectives) into.add(std::move(c));
  into.probe_ran = into.probe_ran || from.probe_ran;
  into.unparseable += from.unparseable;
  into.sources.insert(into.sources.end(), from.sources.begin(), from.sources.end());
}

}  // namespace

bool is_attempt_folder(const fs::path& folder) {
  std::error_code ec;
  return fs::is_regular_file(folder / "gate.toml", ec);
}

Expected<std::vector<logs::RankLog>> attempt_rank_logs(const fs::path& folder,
                                                       std::vector<logs::RankLog> read) {
  const fs::path gate_file = folder / "gate.toml";
  auto cfg = config::load_config({gate_file.string(), {}, {}});
  if (!cfg) {
    Error e = cfg.error().front();
    if (e.file.empty()) e.file = gate_file.string();
    e.message = "the attempt's configuration cannot be read: " + e.message;
    return tl::unexpected(std::move(e));
  }
  AttemptWatch watch;
  watch.configure(*cfg);
  std::vector<logs::RankLog> out;
  std::map<int, std::vector<std::string>> files;  // rank -> the files that held its lines
  for (logs::RankLog& log : read) {
    if (log.rank < 0) {
      out.push_back(std::move(log));
      continue;
    }
    const std::string name = fs::path(log.label()).filename().string();
    files[log.rank].push_back(log.label());
    if (name.rfind("probe-rank", 0) == 0) {
      append(watch.from_probe[log.rank], std::move(log));
    } else if (name == fmt::format("rank{}.log", log.rank)) {
      append(watch.from_file[log.rank], std::move(log));
    } else {
      append(watch.from_streams[log.rank], std::move(log));
    }
  }
  std::vector<logs::RankLog> ranks;
  for (const auto& [rank, sources] : files) {
    logs::RankLog merged = watch.rank_log(rank);
    // Evidence cites the files as they lie, the trainer's own log first when it wrote one.
    const std::string own = (folder / fmt::format("rank{}.log", rank)).string();
    merged.sources.clear();
    for (const std::string& s : sources) {
      if (s == own)
        merged.sources.insert(merged.sources.begin(), s);
      else
        merged.sources.push_back(s);
    }
    ranks.push_back(std::move(merged));
  }
  ranks.insert(ranks.end(), std::make_move_iterator(out.begin()),
               std::make_move_iterator(out.end()));
  return ranks;
}

}  // namespace bigmac::attempt
