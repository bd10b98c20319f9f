#include "proc/posix_process_runner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>

#include "core/file_creation.h"
#include "proc/process_table.h"
#include "proc/program_path.h"
#include "proc/rank_shepherd.h"

extern char** environ;

namespace bigmac::proc {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kChunk = 64 * 1024;
// Per poll and stream: enough to keep a flooding rank moving, small enough to stay fair.
constexpr std::size_t kReadBudget = 1024 * 1024;

std::vector<std::string> build_environment(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    std::string_view name = entry.substr(0, entry.find('='));
    if (extra.count(std::string(name)) == 0) out.emplace_back(entry);
  }
  for (const auto& [name, value] : extra) out.push_back(name + "=" + value);
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

Fd open_output(const std::filesystem::path& path, std::string& error) {
  if (path.empty()) return Fd();
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  // Never through a planted link, into a FIFO or into a hard-linked file (core/file_creation).
  auto fd = create_file(path, Existing::kTruncate);
  if (!fd) {
    error = fd.error().format();
    return Fd();
  }
  return std::move(*fd);
}

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // a full disk loses the file copy; streaming to the parser goes on
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

struct PosixProcessRunner::Child {
  int rank = 0;
  pid_t pid = 0;
  Fd pidfd;
  std::array<Fd, 2> pipes;  // indexed by Stream
  std::array<Fd, 2> files;
  bool reaped = false;
};

PosixProcessRunner::PosixProcessRunner() : self_(::getpid()) { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }

PosixProcessRunner::~PosixProcessRunner() {
  if (pgid_ != 0) terminate(std::chrono::milliseconds(0), nullptr);
}

Expected<pid_t> PosixProcessRunner::spawn(const RankSpec& spec) {
  auto fail = [&](std::string message, std::string hint = {}) -> Expected<pid_t> {
    Error e =
        make_error(ErrorKind::kInfrastructure,
                   fmt::format("rank {}: {}", spec.rank, std::move(message)), std::move(hint));
    return tl::unexpected(std::move(e));
  };
  if (spec.argv.empty()) return fail("empty argv");
  auto child = std::make_unique<Child>();
  child->rank = spec.rank;

  std::vector<std::string> env_strings = build_environment(spec.env);
  const char* path_var = std::getenv("PATH");
  auto found = spec.env.find("PATH");
  // PATH lookup happens before fork, so a missing program is an error with a message rather
  // than an exit code 127 that looks like a trainer failure.
  Expected<std::string> program = find_program(
      spec.argv[0], found != spec.env.end() ? found->second : (path_var ? path_var : ""));
  if (!program) return fail(program.error().message, program.error().hint);

  std::string open_error;
  child->files[0] = open_output(spec.stdout_path, open_error);
  child->files[1] = open_output(spec.stderr_path, open_error);
  if (!open_error.empty()) return fail(open_error);

  Pipe out;
  Pipe err;
  Pipe report;
  if (!make_pipe(out) || !make_pipe(err) || !make_pipe(report)) {
    return fail(fmt::format("pipe: {}", std::strerror(errno)));
  }
  // The report pipe is read blocking: it only ever yields an errno or EOF at exec.
  ::fcntl(report.read.get(), F_SETFL, 0);
  Fd null_in(::open("/dev/null", O_RDONLY | O_CLOEXEC));

  std::vector<std::string> argv_strings = spec.argv;
  std::vector<char*> argv = c_strings(argv_strings);
  std::vector<char*> envp = c_strings(env_strings);
  const std::string dir = spec.working_dir.string();

  ShepherdLaunch launch;
  launch.orchestrator = self_;
  launch.stdin_fd = null_in.get();
  launch.stdout_fd = out.write.get();
  launch.stderr_fd = err.write.get();
  launch.report_fd = report.write.get();
  launch.working_dir = dir.empty() ? nullptr : dir.c_str();
  launch.program = program->c_str();
  launch.argv = argv.data();
  launch.envp = envp.data();
  launch.end_signal = shepherd_end_signal();

  pid_t pid = ::fork();
  if (pid < 0) return fail(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    ::setpgid(0, pgid_);
    run_rank_shepherd(launch);
  }
  // Both sides set the group so that neither order of scheduling leaves a window.
  ::setpgid(pid, pgid_ == 0 ? pid : pgid_);
  out.write.reset();
  err.write.reset();
  report.write.reset();

  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(report.read.get(), &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return fail(fmt::format("cannot start {}{}: {}", *program, dir.empty() ? "" : " in " + dir,
                            std::strerror(child_errno)));
  }

  if (pgid_ == 0) pgid_ = pid;
  child->pid = pid;
  child->pipes[0] = std::move(out.read);
  child->pipes[1] = std::move(err.read);
  if (use_pidfd_) {
    long fd = ::syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0) {
      child->pidfd.reset(static_cast<int>(fd));
      ::fcntl(child->pidfd.get(), F_SETFD, FD_CLOEXEC);
    } else {
      use_pidfd_ = false;  // old kernel: fall back to short poll timeouts
    }
  }
  children_.push_back(std::move(child));
  return pid;
}

bool PosixProcessRunner::read_stream(Child& child, Stream stream, std::size_t budget,
                                     const OutputSink& sink) {
  const std::size_t index = stream == Stream::kStdout ? 0 : 1;
  Fd& pipe = child.pipes[index];
  bool delivered = false;
  std::array<char, kChunk> buffer;
  std::size_t total = 0;
  while (pipe && total < budget) {
    ssize_t n = ::read(pipe.get(), buffer.data(), buffer.size());
    if (n > 0) {
      std::string_view bytes(buffer.data(), static_cast<std::size_t>(n));
      if (child.files[index]) write_all(child.files[index].get(), bytes);
      if (sink) sink(child.rank, stream, bytes);
      delivered = true;
      total += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      break;
    } else {
      pipe.reset();  // EOF: every writer (the rank and its children) closed it
    }
  }
  return delivered;
}

void PosixProcessRunner::reap(std::vector<RankExit>& exits, const OutputSink& sink) {
  for (auto& child : children_) {
    if (child->reaped) continue;
    int status = 0;
    pid_t r;
    do {
      r = ::waitpid(child->pid, &status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == 0) continue;
    child->reaped = true;
    child->pidfd.reset();
    // Output written before the exit is delivered before the exit is reported. A grandchild may
    // still hold the pipe, so stop at "nothing more now" rather than waiting for EOF.
    read_stream(*child, Stream::kStdout, 16 * kReadBudget, sink);
    read_stream(*child, Stream::kStderr, 16 * kReadBudget, sink);
    RankExit exit;
    exit.rank = child->rank;
    exit.pid = child->pid;
    exit.status = r > 0 ? ExitStatus::from_wait_status(status) : ExitStatus{-1, 0};
    exits.push_back(exit);
  }
}

PollResult PosixProcessRunner::poll(std::chrono::milliseconds timeout, const OutputSink& sink) {
  PollResult result;
  struct Source {
    Child* child;
    int what;  // 0 stdout, 1 stderr, 2 pidfd
  };
  std::vector<pollfd> fds;
  std::vector<Source> sources;
  for (auto& child : children_) {
    for (int i = 0; i < 2; ++i) {
      if (child->pipes[i]) {
        fds.push_back({child->pipes[i].get(), POLLIN, 0});
        sources.push_back({child.get(), i});
      }
    }
    if (child->pidfd) {
      fds.push_back({child->pidfd.get(), POLLIN, 0});
      sources.push_back({child.get(), 2});
    }
  }
  if (fds.empty() && running() == 0) return result;
  if (!use_pidfd_) timeout = std::min(timeout, std::chrono::milliseconds(10));
  int ready = ::poll(fds.data(), fds.size(), static_cast<int>(timeout.count()));
  if (ready > 0) {
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0 || sources[i].what == 2) continue;
      Stream stream = sources[i].what == 0 ? Stream::kStdout : Stream::kStderr;
      result.output |= read_stream(*sources[i].child, stream, kReadBudget, sink);
    }
  }
  // EINTR lands here too, so a Ctrl-C handler's flag is seen by the caller's loop at once.
  reap(result.exited, sink);
  return result;
}

std::size_t PosixProcessRunner::running() const {
  std::size_t n = 0;
  for (const auto& child : children_) n += child->reaped ? 0 : 1;
  return n;
}

std::vector<pid_t> PosixProcessRunner::pids() const {
  std::vector<pid_t> out;
  for (const auto& child : children_) out.push_back(child->pid);
  return out;
}

void PosixProcessRunner::reap_group_leftovers() {
  // Ranks are reaped; what is left in the group are grandchildren. SIGKILL them and reap those
  // re-parented to us. Zombies of other parents are theirs to reap.
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (::killpg(pgid_, 0) == 0 && Clock::now() < deadline) {
    ::killpg(pgid_, SIGKILL);
    int status = 0;
    pid_t r = ::waitpid(-pgid_, &status, WNOHANG);
    if (r < 0 && errno == ECHILD) {
      // Only zombies of a foreign parent (or processes dying right now) remain.
      bool alive = false;
      for (const ProcessInfo& p : processes_in_group(pgid_)) alive |= !p.zombie();
      if (!alive) return;
    }
    if (r <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void PosixProcessRunner::drain_and_close(const OutputSink& sink) {
  for (auto& child : children_) {
    // Every writer is dead, so what is in the pipe is all there is.
    read_stream(*child, Stream::kStdout, SIZE_MAX, sink);
    read_stream(*child, Stream::kStderr, SIZE_MAX, sink);
    for (Fd& fd : child->pipes) fd.reset();
    for (Fd& fd : child->files) fd.reset();
  }
}

std::vector<RankExit> PosixProcessRunner::terminate(std::chrono::milliseconds grace,
                                                    const OutputSink& sink) {
  std::vector<RankExit> exits;
  if (pgid_ == 0) return exits;
  if (running() > 0) {
    ::killpg(pgid_, SIGTERM);
    const auto deadline = Clock::now() + grace;
    while (running() > 0 && Clock::now() < deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      PollResult r = poll(std::max(left, std::chrono::milliseconds(1)), sink);
      exits.insert(exits.end(), r.exited.begin(), r.exited.end());
    }
    if (running() > 0) {
      // Each shepherd kills its rank and everything the rank started, also what left the
      // group; a bounded wait for that, then SIGKILL to the group for anything stuck.
      for (const auto& child : children_) {
        if (!child->reaped) ::kill(child->pid, shepherd_end_signal());
      }
      const auto end_deadline = Clock::now() + std::chrono::seconds(5);
      while (running() > 0 && Clock::now() < end_deadline) {
        PollResult r = poll(std::chrono::milliseconds(100), sink);
        exits.insert(exits.end(), r.exited.begin(), r.exited.end());
      }
    }
    if (running() > 0) {
      ::killpg(pgid_, SIGKILL);
      // Bounded: a process in uninterruptible sleep (a hung GPU driver call) cannot die until it
      // leaves it, and the orchestrator must still report rather than hang with it.
      const auto kill_deadline = Clock::now() + std::chrono::seconds(10);
      while (running() > 0 && Clock::now() < kill_deadline) {
        PollResult r = poll(std::chrono::milliseconds(100), sink);
        exits.insert(exits.end(), r.exited.begin(), r.exited.end());
      }
    }
  }
  reap_group_leftovers();
  drain_and_close(sink);
  return exits;
}

}  // namespace bigmac::proc
