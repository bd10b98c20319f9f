#include "baseline/rank_series.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>

#include "baseline/baseline_commands.h"
#include "logs/rank_log.h"

namespace bigmac::baseline {
namespace {

// The rank the lines of a file without one belong to: the file name's, else its run record's.
int file_rank(const std::filesystem::path& path, const std::vector<logs::Record>& records) {
  if (const int named = logs::rank_from_path(path.string()); named >= 0) return named;
  std::set<int> run_ranks;
  for (const logs::Record& r : records) {
    if (const auto* run = std::get_if<logs::RunRecord>(&r); run && run->at.rank >= 0) {
      run_ranks.insert(run->at.rank);
    }
  }
  return run_ranks.size() == 1 ? *run_ranks.begin() : -1;
}

std::string where(const LoggedStep& s) { return fmt::format("{}:{}", s.file, s.step.at.line); }

}  // namespace

Expected<std::vector<RankSeries>> read_rank_series(const std::vector<std::filesystem::path>& paths,
                                                   const logs::ParserOptions& options) {
  std::map<int, RankSeries> ranked;
  std::vector<RankSeries> unranked;
  for (const std::filesystem::path& path : paths) {
    auto records = read_log_records(path, options);
    if (!records) return tl::unexpected(records.error());
    const int fallback = file_rank(path, *records);
    RankSeries own{-1, path.string(), {}, {}};
    for (logs::Record& record : *records) {
      const int line_rank = logs::origin_of(record).rank;
      const int rank = line_rank >= 0 ? line_rank : fallback;
      RankSeries& series = rank >= 0 ? ranked[rank] : own;
      if (rank >= 0) {
        series.rank = rank;
        series.label = fmt::format("rank {}", rank);
      }
      if (const auto* step = std::get_if<logs::StepRecord>(&record)) {
        series.steps.push_back({*step, path.string()});
      }
      series.records.push_back(std::move(record));
    }
    if (!own.records.empty()) unranked.push_back(std::move(own));
  }
  std::vector<RankSeries> out;
  for (auto& [rank, series] : ranked) out.push_back(std::move(series));
  for (RankSeries& series : unranked) out.push_back(std::move(series));
  return out;
}

std::optional<std::string> series_contradiction(const RankSeries& series) {
  std::map<std::int64_t, const LoggedStep*> first;
  for (const LoggedStep& s : series.steps) {
    const auto [it, fresh] = first.try_emplace(s.step.global_step, &s);
    if (!fresh) {
      return fmt::format(
          "{} logs step {} twice ({} and {}): a run logs each step once, so which is the run's? "
          "(a restarted run? compare one attempt's logs)",
          series.label, s.step.global_step, where(*it->second), where(s));
    }
    const std::pair<const char*, const std::optional<double>*> values[] = {
        {"loss", &s.step.loss}, {"grad_norm", &s.step.grad_norm}, {"lr", &s.step.lr}};
    for (const auto& [metric, value] : values) {
      if (*value && !std::isfinite(**value)) {
        return fmt::format("{}'s {} is {} at step {} ({}): a run's values must be finite",
                           series.label, metric, **value, s.step.global_step, where(s));
      }
    }
  }
  return std::nullopt;
}

}  // namespace bigmac::baseline
