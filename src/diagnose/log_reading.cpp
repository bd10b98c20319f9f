#include "diagnose/log_reading.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <map>
#include <system_error>
#include <unordered_map>

#include "core/checked_integer.h"
#include "core/input_file.h"
#include "diagnose/text_scan.h"
#include "logs/rank_log.h"

namespace bigmac::diagnose {
namespace fs = std::filesystem;
namespace {

bool looks_like_log(const fs::path& file) {
  // .stdout/.stderr: the per-rank streams bigmac-bringup's launcher writes beside rank<N>.log.
  static constexpr std::array<std::string_view, 7> kExtensions = {
      ".log", ".txt", ".out", ".err", ".jsonl", ".stdout", ".stderr"};
  const std::string ext = file.extension().string();
  if (ext.empty()) return file.filename().string().front() != '.';
  return std::find(kExtensions.begin(), kExtensions.end(), ext) != kExtensions.end();
}

int parse_int(std::string_view digits) { return parse_integer_as<int>(digits).value_or(-1); }

Error input_error(const fs::path& path, std::string message) {
  Error e = make_error(ErrorKind::kInput, std::move(message));
  e.file = path.string();
  return e;
}

}  // namespace

Expected<std::vector<fs::path>> collect_log_files(const std::vector<std::string>& paths) {
  std::vector<fs::path> files;
  for (const std::string& given : paths) {
    const fs::path path(given);
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (ec || !fs::exists(status))
      return tl::unexpected(input_error(path, "no such file or directory"));
    if (!fs::is_directory(status)) {
      files.push_back(path);
      continue;
    }
    std::vector<fs::path> found;
    for (fs::recursive_directory_iterator
             it(path, fs::directory_options::skip_permission_denied, ec),
         end;
         !ec && it != end; it.increment(ec)) {
      if (it->is_regular_file(ec) && looks_like_log(it->path())) found.push_back(it->path());
    }
    if (ec)
      return tl::unexpected(
          input_error(path, fmt::format("cannot list directory: {}", ec.message())));
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

std::vector<std::vector<fs::path>> group_log_files(const std::vector<std::string>& paths,
                                                   const std::vector<fs::path>& files) {
  std::vector<fs::path> run_dirs;
  for (const std::string& given : paths) {
    std::error_code ec;
    if (fs::is_directory(given, ec) && fs::exists(fs::path(given) / "state.json", ec)) {
      run_dirs.emplace_back(given);
    }
  }
  std::map<std::string, std::vector<fs::path>> by_attempt;
  std::vector<fs::path> rest;
  for (const fs::path& file : files) {
    bool placed = false;
    for (const fs::path& run : run_dirs) {
      const fs::path relative = file.lexically_relative(run);
      if (relative.empty() || *relative.begin() == "..") continue;
      by_attempt[run.string() + "/" + relative.begin()->string()].push_back(file);
      placed = true;
      break;
    }
    if (!placed) rest.push_back(file);
  }
  std::vector<std::vector<fs::path>> groups;
  for (auto& [folder, group] : by_attempt) groups.push_back(std::move(group));
  if (!rest.empty()) groups.push_back(std::move(rest));
  return groups;
}

int rank_from_file_name(const fs::path& file) {
  std::string stem = file.stem().string();
  std::transform(stem.begin(), stem.end(), stem.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (auto pos = stem.rfind("rank"); pos != std::string::npos) {
    std::size_t begin = pos + 4;
    while (begin < stem.size() && (stem[begin] == '-' || stem[begin] == '_')) ++begin;
    std::size_t end = begin;
    while (end < stem.size() && std::isdigit(static_cast<unsigned char>(stem[end])) != 0) ++end;
    if (end > begin) return parse_int(std::string_view(stem).substr(begin, end - begin));
  }
  // torchrun --log-dir: <dir>/<run>/attempt_<n>/<local_rank>/{stdout,stderr}.log
  const fs::path parent = file.parent_path();
  if (parent.has_filename() && parent.parent_path().filename().string().rfind("attempt_", 0) == 0) {
    return parse_int(parent.filename().string());
  }
  return -1;
}

namespace {

// Hands each record to its rank's log (in order of first appearance); text lines go to the
// scan instead when there is one.
class RankSorter {
 public:
  RankSorter(std::string file, TextScan* scan) : file_(std::move(file)), scan_(scan) {}

  void take(std::vector<logs::Record>& fresh) {
    for (logs::Record& r : fresh) {
      if (const auto* line = std::get_if<logs::TextLine>(&r); line != nullptr && scan_ != nullptr) {
        scan_->add_line(*line);
        continue;
      }
      log_of(logs::origin_of(r).rank).add(std::move(r));
    }
    fresh.clear();
  }

  std::vector<logs::RankLog> result() && { return std::move(logs_); }

 private:
  // Indexed: a file of 200,000 one-line ranks is read in linear time (issue 30 item 15).
  logs::RankLog& log_of(int rank) {
    const auto [it, fresh] = index_.try_emplace(rank, logs_.size());
    if (!fresh) return logs_[it->second];
    logs::RankLog& log = logs_.emplace_back();
    log.rank = rank;
    log.sources.push_back(file_);
    return log;
  }

  std::string file_;
  TextScan* scan_;
  std::vector<logs::RankLog> logs_;
  std::unordered_map<int, std::size_t> index_;  ///< rank -> its log in logs_
};

}  // namespace

Expected<std::vector<logs::RankLog>> read_log_records(const fs::path& file, TextScan* scan,
                                                      const logs::ParserOptions& options) {
  if (scan != nullptr) scan->begin_file(file.string());
  RankSorter sorter(file.string(), scan);
  auto read = logs::stream_log_file(file.string(), options, rank_from_file_name(file),
                                    [&](std::vector<logs::Record>& fresh) { sorter.take(fresh); });
  if (!read) return tl::unexpected(std::move(read.error()));
  return std::move(sorter).result();
}

}  // namespace bigmac::diagnose
