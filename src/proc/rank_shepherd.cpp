#include "proc/rank_shepherd.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstddef>
#include <ctime>

namespace bigmac::proc {
namespace {

// Everything below runs between fork and exec (or instead of exec): system calls and plain
// loops over fixed buffers only — no allocation, no stdio, no locks.

constexpr int kMaxPids = 1024;  // per round; a longer list is finished in the next round

[[noreturn]] void report_and_exit(int fd, int error) {
  [[maybe_unused]] ssize_t n = ::write(fd, &error, sizeof error);
  ::_exit(127);
}

// Appends the decimal digits of `value` at out[at...]; returns the new end.
std::size_t append_number(char* out, std::size_t at, unsigned long value) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  while (n > 0) out[at++] = digits[--n];
  return at;
}

// "/proc/<pid><leaf>" into `out` (which holds at least 64 bytes); a '#' in `leaf` stands for
// the pid again ("/task/#/children").
void proc_path(pid_t pid, const char* leaf, char* out) {
  const auto id = static_cast<unsigned long>(pid);
  std::size_t at = 0;
  for (const char* p = "/proc/"; *p != '\0'; ++p) out[at++] = *p;
  at = append_number(out, at, id);
  for (const char* p = leaf; *p != '\0'; ++p) {
    if (*p == '#') {
      at = append_number(out, at, id);
    } else {
      out[at++] = *p;
    }
  }
  out[at] = '\0';
}

// Reads up to `size - 1` bytes of a small /proc file; -1 when it cannot be opened.
ssize_t read_small(const char* path, char* buffer, std::size_t size) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  std::size_t total = 0;
  while (total + 1 < size) {
    const ssize_t n = ::read(fd, buffer + total, size - 1 - total);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    total += static_cast<std::size_t>(n);
  }
  ::close(fd);
  buffer[total] = '\0';
  return static_cast<ssize_t>(total);
}

// Parses the decimal numbers of "12 345 6789 ".
int parse_pids(const char* text, pid_t* out, int max) {
  int count = 0;
  long value = -1;
  for (const char* p = text;; ++p) {
    if (*p >= '0' && *p <= '9') {
      value = (value < 0 ? 0 : value * 10) + (*p - '0');
      continue;
    }
    if (value > 0 && count < max) out[count++] = static_cast<pid_t>(value);
    value = -1;
    if (*p == '\0') return count;
  }
}

// The parent pid in /proc/<pid>/stat ("pid (comm) state ppid ..."; comm may hold spaces and
// parentheses, so parse from the last ')').
pid_t parent_of(pid_t pid) {
  char path[64];
  char stat[512];
  proc_path(pid, "/stat", path);
  const ssize_t n = read_small(path, stat, sizeof stat);
  if (n <= 0) return -1;
  const char* close = nullptr;
  for (const char* p = stat; *p != '\0'; ++p) {
    if (*p == ')') close = p;
  }
  if (close == nullptr || close[1] == '\0' || close[2] == '\0') return -1;
  pid_t found[1];
  return parse_pids(close + 3, found, 1) == 1 ? found[0] : -1;
}

// Kernels without CONFIG_PROC_CHILDREN: scan /proc for processes whose parent is `self`.
int children_by_scan(pid_t self, pid_t* out, int max) {
  const int dir = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 0;
  int count = 0;
  alignas(8) char entries[4096];
  for (;;) {
    const long n = ::syscall(SYS_getdents64, dir, entries, sizeof entries);
    if (n <= 0) break;
    for (long at = 0; at < n;) {
      const auto* entry = reinterpret_cast<const dirent64*>(entries + at);
      at += entry->d_reclen;
      pid_t pid[1];
      if (parse_pids(entry->d_name, pid, 1) == 1 && pid[0] != self && parent_of(pid[0]) == self &&
          count < max) {
        out[count++] = pid[0];
      }
    }
  }
  ::close(dir);
  return count;
}

// Direct children of `self` (a single-threaded process: its only task is itself).
int children_of_self(pid_t self, pid_t* out, int max) {
  char path[64];
  char text[8192];
  proc_path(self, "/task/#/children", path);
  if (read_small(path, text, sizeof text) < 0) return children_by_scan(self, out, max);
  return parse_pids(text, out, max);
}

// Kills every descendant and reaps it. A subreaper inherits the children of each process it
// reaps before it can reap that process, so "no child left" means "no descendant left".
void kill_subtree(pid_t self, pid_t rank, int& rank_status, bool& rank_done) {
  pid_t pids[kMaxPids];
  for (;;) {
    const int n = children_of_self(self, pids, kMaxPids);
    for (int i = 0; i < n; ++i) ::kill(pids[i], SIGKILL);
    int status = 0;
    const pid_t reaped = ::waitpid(-1, &status, __WALL);
    if (reaped == rank) {
      rank_status = status;
      rank_done = true;
    }
    if (reaped < 0 && errno == EINTR) continue;
    if (reaped < 0) return;  // ECHILD: nothing left
  }
}

// Ends this process the way the rank ended, so the orchestrator's waitpid reads the same.
[[noreturn]] void exit_like(int status) {
  if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);  // the rank dumped its core already, if any
    struct sigaction action {};
    action.sa_handler = SIG_DFL;
    ::sigaction(sig, &action, nullptr);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, sig);
    ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
    ::kill(::getpid(), sig);
    ::_exit(128 + sig);
  }
  ::_exit(128 + SIGKILL);
}

[[noreturn]] void exec_rank(const ShepherdLaunch& l, pid_t shepherd) {
  // The rank dies with its shepherd; if the shepherd is already gone, nobody would kill it.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != shepherd) ::_exit(128 + SIGKILL);
  // Ignored signals survive exec; a rank must start with default dispositions and no mask.
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::dup2(l.stdin_fd, STDIN_FILENO);
  ::dup2(l.stdout_fd, STDOUT_FILENO);
  ::dup2(l.stderr_fd, STDERR_FILENO);
  if (l.working_dir != nullptr && ::chdir(l.working_dir) != 0) report_and_exit(l.report_fd, errno);
  ::execve(l.program, l.argv, l.envp);
  report_and_exit(l.report_fd, errno);
}

// Seconds a rank gets to end by itself after its orchestrator died, before SIGKILL. Its own
// teardown is what reaches processes that no kill from here can: srun ends the Slurm job step
// on other nodes (its tasks are children of slurmstepd there, and a SIGKILLed srun leaves the
// step running for minutes), a torchrun agent stops its workers.
constexpr long kOrphanGraceSeconds = 20;

long monotonic_ms() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

// Reaps every child that has exited, without waiting; notes the rank's status when it is one.
void reap_exited(pid_t rank, int& rank_status, bool& rank_done) {
  int status = 0;
  pid_t reaped;
  while ((reaped = ::waitpid(-1, &status, WNOHANG | __WALL)) > 0) {
    if (reaped == rank) {
      rank_status = status;
      rank_done = true;
    }
  }
}

// Reaps children until the rank is among them or `deadline_ms` (monotonic) passes.
void wait_for_rank(pid_t rank, long deadline_ms, int& rank_status, bool& rank_done) {
  sigset_t child;
  sigemptyset(&child);
  sigaddset(&child, SIGCHLD);
  while (!rank_done) {
    reap_exited(rank, rank_status, rank_done);
    const long left = deadline_ms - monotonic_ms();
    if (rank_done || left <= 0) return;
    const timespec wait{left / 1000, (left % 1000) * 1000000};
    siginfo_t info{};
    ::sigtimedwait(&child, &info, &wait);
  }
}

}  // namespace

int shepherd_end_signal() { return SIGRTMIN + 1; }

void run_rank_shepherd(const ShepherdLaunch& l) {
  // Every signal waits until asked for: SIGTERM and SIGINT are the rank's to handle (the group
  // got them too), SIGCHLD and the end signal are read below.
  sigset_t all;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  ::prctl(PR_SET_NAME, "bigmac-shepherd");
  ::prctl(PR_SET_PDEATHSIG, l.end_signal);
  // The orchestrator may have died before prctl took effect; then no signal would come.
  if (::getppid() != l.orchestrator) ::_exit(128 + SIGKILL);

  const pid_t self = ::getpid();
  const pid_t rank = ::fork();
  if (rank < 0) report_and_exit(l.report_fd, errno);
  if (rank == 0) exec_rank(l, self);
  // The rank's pipes and the exec report are the rank's alone: the orchestrator sees EOF when
  // the rank and its children close them, and the report at exec.
  ::close(l.stdin_fd);
  ::close(l.stdout_fd);
  ::close(l.stderr_fd);
  ::close(l.report_fd);

  sigset_t wanted;
  sigemptyset(&wanted);
  sigaddset(&wanted, SIGCHLD);
  sigaddset(&wanted, l.end_signal);
  int rank_status = 0;
  bool rank_done = false;
  for (;;) {
    siginfo_t info{};
    const int sig = ::sigwaitinfo(&wanted, &info);
    if (sig == SIGCHLD) {
      reap_exited(rank, rank_status, rank_done);
      if (!rank_done) continue;
    } else if (sig != l.end_signal) {
      continue;  // EINTR
    }
    // The orchestrator is gone (the kernel's parent-death signal; it asks itself only while
    // alive): the rank gets SIGTERM and a grace to end its own way first.
    if (!rank_done && sig == l.end_signal && ::getppid() != l.orchestrator) {
      ::kill(rank, SIGTERM);
      wait_for_rank(rank, monotonic_ms() + kOrphanGraceSeconds * 1000, rank_status, rank_done);
    }
    // The rank ended, or the orchestrator is gone or wants everything gone.
    kill_subtree(self, rank, rank_status, rank_done);
    if (!rank_done) rank_status = SIGKILL;  // the wait status of a process killed by SIGKILL
    exit_like(rank_status);
  }
}

}  // namespace bigmac::proc
