#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launch/watchdog.h"
#include "logs/ledger.h"
#include "logs/record.h"

namespace bigmac::launch {

/// One Python frame of a stack, as faulthandler prints it.
struct StackFrame {
  std::string file;
  int line = 0;
  std::string function;
};

/// Where one rank's main thread was when the watchdog stopped the run (the probe's stacks on
/// request, docs/probe.md): what a stall verdict needs to tell the rank that is elsewhere from
/// the ranks waiting for it.
struct RankStack {
  int rank = -1;
  std::vector<StackFrame> frames;  ///< the main thread's, innermost first
  /// The innermost frame of the program's own code (not under a library directory).
  std::optional<StackFrame> program_frame;
  /// The library function the program called there ("all_reduce", "barrier"); empty when the
  /// program's own frame is innermost (a sleep, a C call without a Python frame).
  std::string call;
  /// Waiting on other ranks: a frame of torch.distributed, or autograd's backward (where DDP's
  /// gradient all-reduce waits), on the main thread.
  bool waits_on_others = false;
  std::filesystem::path dump;  ///< the whole dump, every thread (faulthandler's text)
  std::string unobservable;    ///< why there is no stack; empty when there is one

  /// "in all_reduce, called at train.py:61 in main", "at data.py:40 in load_batch", or
  /// "unobservable: <why>".
  std::string summary() const;
};

/// How to ask one rank for its stacks: what its probe's `run` line said.
struct StackTarget {
  int rank = -1;
  pid_t pid = 0;
  int signal = 0;
  std::filesystem::path path;
  std::string main_thread;  ///< "0x7f3a…", as threading.main_thread().ident
  std::string host;
  std::vector<std::string> library_dirs;
  std::string unavailable;  ///< the probe said it could not register (stacks_unavailable)
};

/// The target a probe's `run` record describes (the rank from its origin).
StackTarget stack_target_of(const logs::RunRecord& run);

/// The main thread's frames of the last dump in `text` (faulthandler's `dump_traceback` format,
/// every thread), innermost first; empty when the text holds no block of that thread.
std::vector<StackFrame> main_thread_frames(std::string_view text, std::string_view main_thread);

/// `frames` read against the program's library directories: program frame, call, waiting.
RankStack read_stack(int rank, std::vector<StackFrame> frames,
                     const std::vector<std::string>& library_dirs);

/// True when `pid` is `root` or one of its descendants (Linux /proc); the only processes the
/// orchestrator signals are its own.
bool descends_from(pid_t pid, const std::vector<pid_t>& roots);

/// Asks every target on this host whose pid descends from `roots` for its stacks (one signal
/// each), waits at most `wait` for their dumps, and reads them. One RankStack per target, with
/// `unobservable` saying why when there is none (another host, no probe signal, no dump in time).
std::vector<RankStack> request_stacks(const std::map<int, StackTarget>& targets,
                                      const std::vector<pid_t>& roots,
                                      std::chrono::milliseconds wait);

/// Each stall gets its rank's place: its ledger against the others' (`ledgers`, the probe's
/// `coll` events, by rank) and its stack. The culprit goes first, the order every report names
/// ranks in (the stall list, the Symptom, the card): a rank that never reached the collective
/// the others are in; else, at one index, the rank whose call differs from the most ranks'
/// (a desync); else a rank outside any torch.distributed call and backward while the others
/// wait in them. Without any of that the watchdog's order stands.
void attribute_stalls(std::vector<Stall>& stalls, const std::vector<RankStack>& stacks,
                      const std::map<int, logs::RankLedger>& ledgers);

}  // namespace bigmac::launch
