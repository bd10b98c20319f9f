#include "proc/process_table.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace bigmac::proc {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

std::string command_line_of(pid_t pid) {
  std::string raw = slurp("/proc/" + std::to_string(pid) + "/cmdline");
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  for (char& c : raw) {
    if (c == '\0') c = ' ';
  }
  return raw;
}

std::optional<ProcessInfo> read_process(pid_t pid) {
  std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  // The command name sits in parentheses and may itself contain ") ", so split at the last one.
  std::size_t open = stat.find('(');
  std::size_t close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close + 2 >= stat.size()) {
    return std::nullopt;
  }
  ProcessInfo info;
  info.pid = pid;
  std::istringstream rest(stat.substr(close + 2));
  long ppid = 0;
  long pgid = 0;
  if (!(rest >> info.state >> ppid >> pgid)) return std::nullopt;
  info.ppid = static_cast<pid_t>(ppid);
  info.pgid = static_cast<pid_t>(pgid);
  info.command_line = command_line_of(pid);
  if (info.command_line.empty())
    info.command_line = "[" + stat.substr(open + 1, close - open - 1) + "]";
  return info;
}

std::vector<ProcessInfo> list_processes() {
  std::vector<ProcessInfo> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (auto info = read_process(static_cast<pid_t>(std::atol(name.c_str())))) {
      out.push_back(std::move(*info));
    }
  }
  return out;
}

std::vector<ProcessInfo> processes_in_group(pid_t pgid) {
  std::vector<ProcessInfo> out;
  for (ProcessInfo& p : list_processes()) {
    if (p.pgid == pgid) out.push_back(std::move(p));
  }
  return out;
}

std::vector<ProcessInfo> children_of(pid_t parent) {
  std::vector<ProcessInfo> out;
  for (ProcessInfo& p : list_processes()) {
    if (p.ppid == parent) out.push_back(std::move(p));
  }
  return out;
}

}  // namespace bigmac::proc
