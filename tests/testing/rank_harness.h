#pragma once

// Starts real rank processes for end-to-end tests: posix_spawn from an argv vector with extra
// environment, all ranks in one new process group, stdout/stderr to files, waitpid with a
// deadline, and the whole group killed and reaped on timeout or destruction. Test-only: the
// product's process handling lives in src/proc.

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace bigmac::testing {

using namespace std::chrono_literals;

/// Polls `condition` every 20 ms until it holds or `deadline` passes; returns whether it held.
/// This is waiting on a condition with a generous limit, not a sleep standing in for one.
inline bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= until) return condition();
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

/// A TCP port free now, outside the kernel's ephemeral range, and kept from the other tests of
/// this machine for this process's lifetime. Ephemeral ports (a bind to port 0) are handed to
/// every outgoing connection too: a port a test picks there and hands to a run that binds it
/// seconds later, gate after gate, can be taken meanwhile by any neighbour's connect(). The pick
/// starts at a random place in [20000, start of the ephemeral range); a claim (a bound abstract
/// Unix socket "bigmac-test-port-<port>", released by the kernel when this process exits) keeps
/// two tests from handing out the same port. The tool's own claim has another name, so the
/// run under test can still claim the port.
inline int free_port() {
  constexpr int kFloor = 20000;
  int low = 32768;  // the ephemeral range's start, Linux's default when unreadable
  {
    std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
    if (!(range >> low) || low <= kFloor + 1024) low = 32768;
  }
  const int count = low - kFloor;
  static std::vector<int> claims;  // held until exit, on purpose
  std::random_device seed;
  const int first = static_cast<int>(seed() % static_cast<unsigned>(count));
  for (int i = 0; i < count; ++i) {
    const int port = kFloor + (first + i) % count;
    int claim = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (claim < 0) break;
    sockaddr_un name{};
    name.sun_family = AF_UNIX;
    const std::string tag = "bigmac-test-port-" + std::to_string(port);
    std::memcpy(name.sun_path + 1, tag.data(), tag.size());  // sun_path[0] = 0: abstract
    const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + tag.size());
    if (bind(claim, reinterpret_cast<sockaddr*>(&name), length) != 0) {
      close(claim);
      continue;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    const bool bound = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    if (fd >= 0) close(fd);
    if (!bound) {
      close(claim);
      continue;
    }
    claims.push_back(claim);
    return port;
  }
  throw std::runtime_error("free_port: no free port below the ephemeral range");
}

/// How a rank ended: exit code, or 128 + signal.
struct RankEnd {
  int code = -1;
  bool signaled = false;
  int signal = 0;
};

/// A set of rank processes in one process group.
class RankHarness {
 public:
  RankHarness() = default;
  RankHarness(const RankHarness&) = delete;
  RankHarness& operator=(const RankHarness&) = delete;
  ~RankHarness() { kill_all(); }

  /// Starts argv with `env` on top of this process's environment; output to the two files.
  /// Returns the rank's index in this harness.
  std::size_t spawn(const std::vector<std::string>& argv,
                    const std::map<std::string, std::string>& env,
                    const std::filesystem::path& stdout_path,
                    const std::filesystem::path& stderr_path) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&actions, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, pgid_);  // 0 for the first: it leads a new group

    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string entry(*e);
      if (env.count(entry.substr(0, entry.find('='))) == 0) env_strings.push_back(entry);
    }
    for (const auto& [key, value] : env) env_strings.push_back(key + "=" + value);
    std::vector<char*> envp;
    for (auto& text : env_strings) envp.push_back(text.data());
    envp.push_back(nullptr);
    std::vector<std::string> args = argv;
    std::vector<char*> argp;
    for (auto& arg : args) argp.push_back(arg.data());
    argp.push_back(nullptr);

    pid_t pid = 0;
    int rc = posix_spawn(&pid, argp[0], &actions, &attr, argp.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) throw std::runtime_error("posix_spawn failed for " + argv[0]);
    if (pgid_ == 0) pgid_ = pid;
    pids_.push_back(pid);
    ends_.emplace_back();
    return pids_.size() - 1;
  }

  pid_t pid(std::size_t index) const { return pids_.at(index); }
  std::size_t size() const { return pids_.size(); }

  /// Sends `sig` to the whole group now (a Ctrl-C, a SIGKILL of the orchestrator).
  void signal_all(int sig) {
    if (pgid_ > 0) ::kill(-pgid_, sig);
  }

  /// Reaps whatever has exited, without blocking.
  void reap() {
    for (std::size_t i = 0; i < pids_.size(); ++i) {
      if (ends_[i]) continue;
      int status = 0;
      if (waitpid(pids_[i], &status, WNOHANG) == pids_[i]) ends_[i] = decode(status);
    }
  }

  bool exited(std::size_t index) {
    reap();
    return ends_.at(index).has_value();
  }

  /// Waits until every rank has exited; false when the deadline passed first (still running).
  bool wait_all(std::chrono::milliseconds deadline) {
    return wait_until(
        [this] {
          reap();
          for (const auto& end : ends_) {
            if (!end) return false;
          }
          return true;
        },
        deadline);
  }

  /// Waits for one rank.
  bool wait_one(std::size_t index, std::chrono::milliseconds deadline) {
    return wait_until([this, index] { return exited(index); }, deadline);
  }

  std::optional<RankEnd> end(std::size_t index) {
    reap();
    return ends_.at(index);
  }

  /// SIGTERM to the group (a launcher such as torchrun forwards it to its workers), up to
  /// `grace` for everyone to exit, then SIGKILL; reaps every rank (no zombie, no orphan).
  void kill_all(std::chrono::milliseconds grace = 5000ms) {
    if (pgid_ == 0) return;
    reap();
    bool running = false;
    for (const auto& end : ends_) running = running || !end;
    if (running) {
      ::kill(-pgid_, SIGTERM);
      wait_all(grace);
    }
    ::kill(-pgid_, SIGKILL);
    for (std::size_t i = 0; i < pids_.size(); ++i) {
      if (ends_[i]) continue;
      int status = 0;
      while (waitpid(pids_[i], &status, 0) < 0 && errno == EINTR) {
      }
      ends_[i] = decode(status);
    }
  }

 private:
  static RankEnd decode(int status) {
    RankEnd end;
    if (WIFEXITED(status)) {
      end.code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      end.signaled = true;
      end.signal = WTERMSIG(status);
      end.code = 128 + end.signal;
    }
    return end;
  }

  pid_t pgid_ = 0;
  std::vector<pid_t> pids_;
  std::vector<std::optional<RankEnd>> ends_;
};

/// The scheduler state letter of a live process (`S` sleeping, `R` running), '?' when gone.
inline char process_state(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto paren = text.rfind(')');
  if (paren == std::string::npos || paren + 2 >= text.size()) return '?';
  return text[paren + 2];
}

/// User + system CPU ticks a process has used so far, -1 when gone.
inline long process_cpu_ticks(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  auto paren = text.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream fields(text.substr(paren + 2));
  std::string field;
  long utime = 0, stime = 0;
  for (int i = 3; fields >> field; ++i) {  // field 3 is the state
    if (i == 14) utime = std::stol(field);
    if (i == 15) {
      stime = std::stol(field);
      break;
    }
  }
  return utime + stime;
}

}  // namespace bigmac::testing
