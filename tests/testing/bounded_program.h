#pragma once

// Runs a real program from an argv vector with a deadline, in a process group of its own, for
// the bad-input suite: a hang becomes a failed case instead of a stuck CI job, and whatever the
// program started dies with it. Test-only: the product's process handling lives in src/proc.

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "testing/run_program.h"

namespace bigmac::testing {

struct BoundedRun {
  std::vector<std::string> argv;
  std::map<std::string, std::string> extra_env;
  std::string cwd;
  std::chrono::seconds timeout{60};
  /// Run as nobody (uid/gid 65534) when this process is root, so that file permissions apply.
  bool unprivileged = false;
};

struct BoundedResult : ProgramResult {
  bool timed_out = false;
};

inline BoundedResult run_bounded(const BoundedRun& run) {
  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe2 failed");
  }
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    if (!run.extra_env.count(entry.substr(0, entry.find('=')))) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : run.extra_env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = run.argv;
  std::vector<char*> argp;
  for (auto& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);
  const bool drop = run.unprivileged && ::geteuid() == 0;

  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    // Child: async-signal-safe calls only.
    ::setpgid(0, 0);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    if (!run.cwd.empty() && ::chdir(run.cwd.c_str()) != 0) ::_exit(126);
    if (drop) {
      const gid_t nogroup = 65534;
      if (::setgroups(1, &nogroup) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) {
        ::_exit(126);
      }
    }
    ::execve(argp[0], argp.data(), envp.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from here, so the group exists before we might kill it
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);

  BoundedResult result;
  const auto deadline = std::chrono::steady_clock::now() + run.timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  char buffer[65536];
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    if (poll(fds, 2, static_cast<int>(left.count())) < 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  if (result.timed_out) ::kill(-pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  // Anything the program left behind in its group goes too.
  ::kill(-pid, SIGKILL);
  for (auto& fd : fds) {
    if (fd.fd >= 0) ::close(fd.fd);
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace bigmac::testing
