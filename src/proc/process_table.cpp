#include "proc/process_table.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <sstream>

#include "core/checked_integer.h"
#include "proc/pipe.h"

namespace bigmac::proc {
namespace {

// POSIX reads, not ifstream: a /proc file whose process exits mid-read fails with ESRCH, which
// libstdc++'s filebuf turns into an exception.
std::string slurp(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  std::string out;
  if (!fd) return out;
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return out;
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

std::vector<pid_t> all_pids() {
  std::vector<pid_t> out;
  // opendir/readdir rather than std::filesystem: its iterator throws when /proc changes under it.
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return out;
  while (const dirent* entry = ::readdir(dir)) {
    const char* name = entry->d_name;
    if (*name < '1' || *name > '9') continue;
    if (auto pid = parse_integer_as<pid_t>(name)) out.push_back(*pid);
  }
  ::closedir(dir);
  return out;
}

std::vector<ProcessInfo> list_processes() {
  std::vector<ProcessInfo> out;
  for (pid_t pid : all_pids()) {
    if (auto info = read_process(pid)) out.push_back(std::move(*info));
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
