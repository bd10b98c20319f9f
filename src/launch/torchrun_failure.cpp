#include "launch/torchrun_failure.h"

#include <cstdio>
#include <fstream>

#include "core/checked_integer.h"
#include "launch/error_line.h"
#include "launch/torchrun_worker_files.h"

namespace bigmac::launch {
namespace {

namespace fs = std::filesystem;

// The value after "<key> : " on the first line at or after `from` that starts with `key`.
std::optional<std::string> field(std::string_view text, std::size_t from, std::string_view key) {
  for (std::size_t at = text.find(key, from); at != std::string_view::npos;
       at = text.find(key, at + 1)) {
    std::size_t colon = text.find(':', at + key.size());
    std::size_t end = text.find('\n', at);
    if (colon == std::string_view::npos || (end != std::string_view::npos && colon > end)) {
      continue;
    }
    std::string_view between = text.substr(at + key.size(), colon - at - key.size());
    if (between.find_first_not_of(' ') != std::string_view::npos) continue;
    std::size_t value_end = end == std::string_view::npos ? text.size() : end;
    return std::string(text.substr(colon + 1, value_end - colon - 1));
  }
  return std::nullopt;
}

// The integer at the start of `text` (after spaces), within int; nullopt when there is none.
std::optional<int> leading_int(std::string_view text) {
  const std::size_t begin = text.find_first_not_of(' ');
  if (begin == std::string_view::npos) return std::nullopt;
  std::size_t end = begin + (text[begin] == '-' ? 1 : 0);
  while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
  return parse_integer_as<int>(text.substr(begin, end - begin));
}

// The integer after the first ':' of `text` ("(local_rank: 3)", "(pid: 1234)").
std::optional<int> after_colon_int(std::string_view text) {
  const std::size_t colon = text.find(':');
  return colon == std::string_view::npos ? std::nullopt : leading_int(text.substr(colon + 1));
}

}  // namespace

std::optional<TorchrunRootCause> parse_torchrun_root_cause(std::string_view text) {
  const std::size_t block = text.rfind("Root Cause (first observed failure):");
  if (block == std::string_view::npos) return std::nullopt;
  auto rank = field(text, block, "rank");
  auto exitcode = field(text, block, "exitcode");
  if (!rank || !exitcode) return std::nullopt;
  TorchrunRootCause cause;
  // "3 (local_rank: 3)" and "-9 (pid: 1234)": the leading number, then one in parentheses.
  auto first = leading_int(*rank);
  auto code = leading_int(*exitcode);
  if (!first || !code) return std::nullopt;
  cause.rank = *first;
  cause.local_rank = after_colon_int(*rank).value_or(cause.local_rank);
  cause.pid = after_colon_int(*exitcode).value_or(0);
  // multiprocessing reports death by signal N as exit code -N.
  cause.status = *code < 0 ? proc::ExitStatus{0, -*code} : proc::ExitStatus{*code, 0};
  return cause;
}

std::string torchrun_rank_error_line(const fs::path& torchrun_log_dir, int local_rank) {
  const fs::path newest = torchrun_worker_file(torchrun_log_dir, local_rank, "stderr.log");
  if (newest.empty()) return {};
  std::ifstream in(newest);
  ErrorLine best;
  std::string line;
  for (int n = 0; n < 100000 && std::getline(in, line); ++n) best.add(line);
  return best.best();
}

}  // namespace bigmac::launch
