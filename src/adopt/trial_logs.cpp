#include "adopt/trial_logs.h"

#include <fmt/format.h>

#include <deque>
#include <fstream>

#include "logs/probe_merge.h"

namespace bigmac::adopt {
namespace fs = std::filesystem;
namespace {

struct Source {
  std::string name;
  fs::path path;
};

std::int64_t losses(const logs::RankLog& log) {
  std::int64_t n = 0;
  for (const logs::StepRecord& s : log.steps) n += s.loss ? 1 : 0;
  return n;
}

// One file as a single rank's log (the trial is rank 0), read with `options`.
Expected<logs::RankLog> read_rank(const fs::path& path, const logs::ParserOptions& options,
                                  logs::LogFormat* detected = nullptr) {
  auto loaded = logs::load_logs({path.string()}, options);
  if (!loaded) return tl::unexpected(loaded.error());
  if (detected && !loaded->files.empty()) *detected = loaded->files.front().stats.detected;
  logs::RankLog out;
  for (logs::RankLog& r : loaded->ranks) {
    for (logs::Record& rec : r.typed_records()) out.add(std::move(rec));
  }
  out.rank = 0;
  out.sources = {path.string()};
  return out;
}

// The lines of a file that carry a loss, at most `limit`.
std::vector<std::string> loss_lines(const fs::path& path, std::size_t limit) {
  std::vector<std::string> out;
  std::ifstream in(path);
  std::string line;
  while (out.size() < limit && std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (carries_loss(line)) out.push_back(line);
  }
  return out;
}

// The first step line of a file as printed: the line of the first step record.
std::string line_at(const fs::path& path, std::int64_t number) {
  std::ifstream in(path);
  std::string line;
  for (std::int64_t i = 1; std::getline(in, line); ++i) {
    if (i == number) return line;
  }
  return "";
}

std::vector<Source> sources_of(const TrialOutputs& outputs) {
  std::vector<Source> out;
  std::error_code ec;
  if (!outputs.log_file.empty() && fs::is_regular_file(outputs.log_file, ec))
    out.push_back({"the log file", outputs.log_file});
  out.push_back({"stdout", outputs.stdout_path});
  out.push_back({"stderr", outputs.stderr_path});
  return out;
}

// The first source whose steps `auto` reads with a loss.
Expected<bool> detect(const std::vector<Source>& sources, TrialLogs& logs) {
  for (const Source& s : sources) {
    logs::LogFormat detected = logs::LogFormat::kAuto;
    auto log = read_rank(s.path, logs::ParserOptions{}, &detected);
    if (!log) return tl::unexpected(log.error());
    if (losses(*log) == 0) continue;
    logs.format = detected;
    logs.format_source = s.name;
    logs.example = line_at(s.path, log->steps.front().at.line);
    logs.trainer = std::move(*log);
    return true;
  }
  return false;
}

// A `[logs.fields]` map for the first source with lines that carry a loss, kept when it reads
// a step with a loss from every such line.
Expected<bool> propose(const std::vector<Source>& sources, TrialLogs& logs) {
  for (const Source& s : sources) {
    const std::vector<std::string> lines = loss_lines(s.path, 64);
    auto proposal = propose_fields(lines);
    if (!proposal) continue;
    auto map = logs::FieldMap::compile(proposal->fields);
    if (!map) continue;
    logs::ParserOptions options(logs::LogFormat::kRegex);
    options.fields = std::move(*map);
    auto log = read_rank(s.path, options);
    if (!log) return tl::unexpected(log.error());
    if (losses(*log) == 0) continue;
    logs.format = logs::LogFormat::kRegex;
    logs.format_source = s.name;
    logs.example = proposal->example;
    logs.proposal = std::move(proposal);
    logs.trainer = std::move(*log);
    return true;
  }
  return false;
}

}  // namespace

Expected<TrialLogs> read_trial_logs(const TrialOutputs& outputs) {
  TrialLogs logs;
  const std::vector<Source> sources = sources_of(outputs);
  auto found = detect(sources, logs);
  if (found && !*found) found = propose(sources, logs);
  if (!found) return tl::unexpected(found.error());
  logs.trainer.rank = 0;
  logs.trainer_losses = losses(logs.trainer);
  std::error_code ec;
  if (!outputs.probe_log.empty() && fs::is_regular_file(outputs.probe_log, ec)) {
    auto probe = read_rank(outputs.probe_log, logs::LogFormat::kBigmac);
    if (!probe) return tl::unexpected(probe.error());
    logs.probe = std::move(*probe);
    logs.probe_losses = losses(logs.probe);
  }
  logs.merged =
      logs.probe.records > 0 ? logs::merge_probe_log(logs.trainer, logs.probe) : logs.trainer;
  logs.merged.rank = 0;
  return logs;
}

void keep_one_line_per_step(TrialLogs& logs) {
  const std::size_t probe = logs.probe.steps.size();
  const std::size_t trainer = logs.trainer.steps.size();
  if (probe == 0 || trainer <= probe) return;
  logs.not_per_step = fmt::format("{} loss lines for {} optimizer steps", trainer, probe);
  drop_trainer_lines(logs);
}

void drop_trainer_lines(TrialLogs& logs) {
  logs.format = logs::LogFormat::kBigmac;
  logs.format_source.clear();
  logs.proposal.reset();
  logs.trainer = logs::RankLog();
  logs.trainer.rank = 0;
  logs.trainer_losses = 0;
  logs.merged = logs::merge_probe_log(logs.trainer, logs.probe);
  logs.merged.rank = 0;
}

std::vector<std::string> last_lines(const fs::path& file, std::size_t count) {
  std::deque<std::string> out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    out.push_back(line);
    if (out.size() > count) out.pop_front();
  }
  return {out.begin(), out.end()};
}

}  // namespace bigmac::adopt
