#include "launch/rank_stacks.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <system_error>
#include <thread>

namespace bigmac::launch {
namespace {

std::optional<std::uint64_t> thread_id(std::string_view hex) {
  if (hex.starts_with("0x") || hex.starts_with("0X")) hex.remove_prefix(2);
  if (hex.empty() || hex.size() > 16) return std::nullopt;
  std::uint64_t value = 0;
  for (const char c : hex) {
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (digit < 0) return std::nullopt;
    value = value * 16 + static_cast<std::uint64_t>(digit);
  }
  return value;
}

// "Current thread 0x00007f… (most recent call first):" or "Thread 0x… …": the thread's id.
std::optional<std::uint64_t> thread_header(std::string_view line) {
  for (const std::string_view head :
       {std::string_view("Current thread 0x"), std::string_view("Thread 0x")}) {
    if (!line.starts_with(head)) continue;
    line.remove_prefix(head.size() - 2);
    const std::size_t end = line.find_first_of(" :");
    return thread_id(line.substr(0, end));
  }
  return std::nullopt;
}

// `  File "/path/x.py", line 61 in main`
std::optional<StackFrame> frame_line(std::string_view line) {
  constexpr std::string_view kFile = "  File \"";
  constexpr std::string_view kLine = "\", line ";
  if (!line.starts_with(kFile)) return std::nullopt;
  line.remove_prefix(kFile.size());
  const std::size_t quote = line.rfind(kLine);
  if (quote == std::string_view::npos) return std::nullopt;
  StackFrame frame;
  frame.file = std::string(line.substr(0, quote));
  std::string_view rest = line.substr(quote + kLine.size());
  std::size_t digits = 0;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9' && digits < 9) {
    frame.line = frame.line * 10 + (rest[digits] - '0');
    ++digits;
  }
  rest.remove_prefix(digits);
  if (rest.starts_with(" in ")) frame.function = std::string(rest.substr(4));
  return frame;
}

bool is_library(const std::string& file, const std::vector<std::string>& library_dirs) {
  // `<frozen importlib._bootstrap>`, `<string>`: the interpreter's own code.
  if (file.empty() || file.front() == '<') return true;
  if (file.find("/bigmac_probe/") != std::string::npos) return true;
  for (const std::string& dir : library_dirs) {
    if (dir.empty()) continue;
    if (file.size() > dir.size() && file.compare(0, dir.size(), dir) == 0 &&
        file[dir.size()] == '/') {
      return true;
    }
  }
  return false;
}

bool waits_on_others(const StackFrame& f) {
  if (f.file.find("/torch/distributed/") != std::string::npos) return true;
  const bool autograd = f.file.ends_with("/torch/autograd/__init__.py") ||
                        f.file.ends_with("/torch/_tensor.py") ||
                        f.file.ends_with("/torch/autograd/graph.py");
  return autograd && (f.function == "backward" || f.function == "_engine_run_backward");
}

// Decorators and module plumbing between the program's call and the function it called.
bool plumbing(const StackFrame& f) {
  static constexpr std::array<std::string_view, 8> kNames = {
      "wrapper", "inner", "_fn", "decorate_context", "wrapped", "_call_impl", "_wrapped_call_impl",
      "__call__"};
  for (const std::string_view name : kNames) {
    if (f.function == name) return true;
  }
  return f.file.find("/bigmac_probe/") != std::string::npos;
}

std::vector<std::string> split_dirs(const std::string& joined) {
  std::vector<std::string> dirs;
  std::size_t start = 0;
  while (start <= joined.size()) {
    const std::size_t end = std::min(joined.find(':', start), joined.size());
    if (end > start) dirs.push_back(joined.substr(start, end - start));
    start = end + 1;
  }
  return dirs;
}

std::uintmax_t size_of(const std::filesystem::path& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  return ec ? 0 : size;
}

std::string read_from(const std::filesystem::path& path, std::uintmax_t offset) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  in.seekg(static_cast<std::streamoff>(offset));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string this_host() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) return {};
  return name.data();
}

}  // namespace

std::string RankStack::summary() const {
  if (!unobservable.empty()) return "stack unobservable: " + unobservable;
  if (program_frame) {
    const std::string at =
        fmt::format("{}:{} in {}", std::filesystem::path(program_frame->file).filename().string(),
                    program_frame->line, program_frame->function);
    return call.empty() ? "at " + at : fmt::format("in {}, called at {}", call, at);
  }
  if (!call.empty()) return fmt::format("in {} (no frame of the program's own code)", call);
  return "no Python frame on the main thread";
}

StackTarget stack_target_of(const logs::RunRecord& run) {
  StackTarget t;
  t.rank = run.at.rank;
  t.pid = static_cast<pid_t>(run.pid);
  t.signal = static_cast<int>(run.stacks_signal.value_or(0));
  t.path = run.stacks_path;
  t.main_thread = run.main_thread;
  t.host = run.host;
  t.library_dirs = split_dirs(run.library_dirs);
  t.unavailable = run.stacks_unavailable;
  return t;
}

std::vector<StackFrame> main_thread_frames(std::string_view text, std::string_view main_thread) {
  const std::optional<std::uint64_t> main_id = thread_id(main_thread);
  std::vector<StackFrame> frames;
  std::vector<StackFrame> current;
  bool in_main = false;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (const auto id = thread_header(line)) {
      if (in_main) frames = std::move(current);
      current.clear();
      in_main = main_id && *id == *main_id;
      continue;
    }
    if (!in_main) continue;
    if (auto frame = frame_line(line)) current.push_back(std::move(*frame));
  }
  if (in_main) frames = std::move(current);
  return frames;
}

RankStack read_stack(int rank, std::vector<StackFrame> frames,
                     const std::vector<std::string>& library_dirs) {
  RankStack stack;
  stack.rank = rank;
  std::optional<std::size_t> program;
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (waits_on_others(frames[i])) stack.waits_on_others = true;
    if (!program && !is_library(frames[i].file, library_dirs)) program = i;
  }
  const std::size_t inner_end = program.value_or(frames.size());
  // The function the program called: the outermost library frame below its own that is not a
  // decorator's or the module call's plumbing.
  for (std::size_t i = inner_end; i-- > 0;) {
    if (plumbing(frames[i])) continue;
    stack.call = frames[i].function;
    break;
  }
  if (program) stack.program_frame = frames[*program];
  stack.frames = std::move(frames);
  return stack;
}

bool descends_from(pid_t pid, const std::vector<pid_t>& roots) {
  for (int depth = 0; pid > 1 && depth < 64; ++depth) {
    for (const pid_t root : roots) {
      if (pid == root) return true;
    }
    std::ifstream stat(fmt::format("/proc/{}/stat", pid));
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    // "pid (comm) state ppid …": comm may hold spaces and parentheses; the last ')' ends it.
    const std::size_t close = text.rfind(')');
    if (close == std::string::npos) return false;
    std::istringstream rest(text.substr(close + 1));
    std::string state;
    long parent = 0;
    if (!(rest >> state >> parent)) return false;
    pid = static_cast<pid_t>(parent);
  }
  return false;
}

std::vector<RankStack> request_stacks(const std::map<int, StackTarget>& targets,
                                      const std::vector<pid_t>& roots,
                                      std::chrono::milliseconds wait) {
  struct Pending {
    const StackTarget* target;
    std::uintmax_t before = 0;
    std::uintmax_t seen = 0;
    int still = 0;
    bool done = false;
  };
  std::vector<RankStack> stacks;
  std::vector<Pending> pending;
  const std::string host = this_host();
  for (const auto& [rank, t] : targets) {
    RankStack s;
    s.rank = rank;
    s.dump = t.path;
    if (!t.unavailable.empty()) {
      s.unobservable = "the probe could not take the signal: " + t.unavailable;
    } else if (t.signal <= 0 || t.path.empty() || t.pid <= 0) {
      s.unobservable = "the rank's probe named no way to ask (an older probe)";
    } else if (!t.host.empty() && !host.empty() && t.host != host) {
      s.unobservable = fmt::format("it runs on {}, not on this host", t.host);
    } else if (!descends_from(t.pid, roots)) {
      s.unobservable = fmt::format("pid {} is no longer a process of this run", t.pid);
    } else {
      const std::uintmax_t before = size_of(t.path);
      if (::kill(t.pid, t.signal) != 0) {
        s.unobservable = fmt::format("signal to pid {}: {}", t.pid, std::strerror(errno));
      } else {
        pending.push_back({&t, before, before, 0, false});
      }
    }
    stacks.push_back(std::move(s));
  }
  // faulthandler writes the dump from inside the signal handler, thread by thread, with no end
  // marker: a dump is taken as whole once it ends a line, holds the main thread's frames and
  // has not grown for kStill (a handler descheduled mid-dump on a loaded machine resumes well
  // within that), or when the wait is over.
  const auto deadline = std::chrono::steady_clock::now() + wait;
  constexpr auto kPoll = std::chrono::milliseconds(20);
  constexpr int kStill = 3;  // polls without growth
  auto open = [&] {
    return std::any_of(pending.begin(), pending.end(), [](const Pending& p) { return !p.done; });
  };
  while (open() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(kPoll);
    for (Pending& p : pending) {
      if (p.done) continue;
      const std::uintmax_t size = size_of(p.target->path);
      p.still = size == p.seen ? p.still + 1 : 0;
      p.seen = size;
      if (size <= p.before || p.still < kStill) continue;
      const std::string text = read_from(p.target->path, p.before);
      p.done = !text.empty() && text.back() == '\n' &&
               !main_thread_frames(text, p.target->main_thread).empty();
    }
  }
  for (const Pending& p : pending) {
    RankStack& s = *std::find_if(stacks.begin(), stacks.end(),
                                 [&](const RankStack& r) { return r.rank == p.target->rank; });
    const std::uintmax_t size = size_of(p.target->path);
    if (size <= p.before) {
      s.unobservable = fmt::format(
          "no dump within {} ms (the process is stopped, or blocks the signal)", wait.count());
      continue;
    }
    std::vector<StackFrame> frames =
        main_thread_frames(read_from(p.target->path, p.before), p.target->main_thread);
    if (frames.empty()) {
      s.unobservable = "the dump holds no frame of the main thread";
      continue;
    }
    const std::filesystem::path dump = s.dump;
    s = read_stack(p.target->rank, std::move(frames), p.target->library_dirs);
    s.dump = dump;
  }
  return stacks;
}

namespace {

std::string ranks_text(const std::vector<int>& ranks) {
  return ranks.size() == 1 ? fmt::format("rank {}", ranks.front())
                           : fmt::format("ranks {}", fmt::join(ranks, ", "));
}

// The ledgers' view. Where the stalled ranks' recent entries part (at one index of one group,
// different calls: another collective or another shape), the ranks whose call is not the
// majority's desync, and the rest follows from it. Else a stalled rank that waits (not
// `elsewhere` by its stack) is in its current call, and every other stalled member of that
// call's group whose ledger there stops short of it never reached it (behind).
void attribute_collectives(std::vector<Stall>& stalls,
                           const std::map<int, logs::RankLedger>& ledgers) {
  auto ledger_of = [&](int rank) -> const logs::RankLedger* {
    auto it = ledgers.find(rank);
    return it == ledgers.end() ? nullptr : &it->second;
  };
  std::map<int, std::vector<logs::CollectiveRecord>> recent;
  for (const Stall& s : stalls) {
    if (const logs::RankLedger* l = ledger_of(s.rank)) recent[s.rank] = l->recent_entries();
  }
  if (const auto split = logs::first_split(recent)) {
    const bool tie = split->odd.size() == split->calls.size();
    for (Stall& s : stalls) {
      auto mine =
          std::find_if(split->calls.begin(), split->calls.end(),
                       [&](const logs::CollectiveRecord& c) { return c.at.rank == s.rank; });
      if (mine == split->calls.end() ||
          std::find(split->odd.begin(), split->odd.end(), s.rank) == split->odd.end())
        continue;
      // Against the majority's call, or with no majority every other rank's.
      std::vector<std::string> others;
      for (const logs::CollectiveRecord& c : split->calls) {
        if (c.at.rank == s.rank || c.same_call(*mine)) continue;
        if (!tie && std::find(split->odd.begin(), split->odd.end(), c.at.rank) != split->odd.end())
          continue;
        others.push_back(fmt::format("rank {} called {}", c.at.rank, c.describe()));
        if (!tie) break;
      }
      s.desync = true;
      s.collective = fmt::format(
          "called {} where {}: the ranks call different collectives at one index (desync)",
          mine->describe(), fmt::join(others, "; "));
    }
  } else {
    // (group, seq) -> the waiting ranks' calls there; the call most ranks wait in first.
    std::map<std::pair<std::string, std::int64_t>, std::vector<const logs::CollectiveRecord*>>
        waits;
    for (const Stall& s : stalls) {
      const logs::RankLedger* l = ledger_of(s.rank);
      if (l != nullptr && !s.elsewhere)
        waits[{l->current.group, l->current.seq}].push_back(&l->current);
    }
    std::vector<std::vector<const logs::CollectiveRecord*>> by_crowd;
    for (auto& [where, calls] : waits) by_crowd.push_back(std::move(calls));
    std::stable_sort(by_crowd.begin(), by_crowd.end(),
                     [](const auto& a, const auto& b) { return a.size() > b.size(); });
    for (const auto& calls : by_crowd) {
      const logs::CollectiveRecord& call = *calls.front();
      std::vector<int> callers;
      for (const logs::CollectiveRecord* c : calls) callers.push_back(c->at.rank);
      for (Stall& s : stalls) {
        if (s.behind || !logs::member_of(call.group, s.rank)) continue;
        const logs::RankLedger* l = ledger_of(s.rank);
        const logs::CollectiveRecord* mine = nullptr;
        if (l != nullptr) {
          if (auto it = l->last_on.find(call.group); it != l->last_on.end()) mine = &it->second;
        }
        if (mine != nullptr && mine->seq >= call.seq) continue;
        s.behind = true;
        s.collective = fmt::format("never reached {}, which {} called; its last: {}",
                                   call.describe(), ranks_text(callers),
                                   mine ? mine->describe() : "no collective on " + call.group);
      }
    }
  }
  for (Stall& s : stalls) {
    const logs::RankLedger* l = ledger_of(s.rank);
    if (s.collective.empty() && l != nullptr)
      s.collective = "last collective " + l->current.describe();
  }
}

}  // namespace

void attribute_stalls(std::vector<Stall>& stalls, const std::vector<RankStack>& stacks,
                      const std::map<int, logs::RankLedger>& ledgers) {
  auto stack_of = [&](int rank) -> const RankStack* {
    for (const RankStack& s : stacks) {
      if (s.rank == rank) return &s;
    }
    return nullptr;
  };
  bool some_wait = false;
  for (Stall& stall : stalls) {
    const RankStack* s = stack_of(stall.rank);
    if (s == nullptr) continue;
    stall.stack = s->summary();
    stall.elsewhere = s->unobservable.empty() && !s->waits_on_others;
    some_wait = some_wait || (s->unobservable.empty() && s->waits_on_others);
  }
  if (!some_wait) {
    for (Stall& stall : stalls) stall.elsewhere = false;
  }
  attribute_collectives(stalls, ledgers);
  // The culprit first: behind by the ledger, then the odd call out, then elsewhere by its stack.
  auto rank_of = [](const Stall& s) { return s.behind ? 0 : s.desync ? 1 : s.elsewhere ? 2 : 3; };
  std::stable_sort(stalls.begin(), stalls.end(),
                   [&](const Stall& a, const Stall& b) { return rank_of(a) < rank_of(b); });
}

}  // namespace bigmac::launch
