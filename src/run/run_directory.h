#pragma once

#include <ctime>
#include <filesystem>
#include <optional>
#include <string>

#include "core/error.h"
#include "run/run_state.h"

namespace bigmac::run {

/// reports/<run-id>/ held by this process: an exclusive flock on `.lock` keeps a second run out
/// (released when the object dies, or by the kernel when the process dies, so a SIGKILLed run
/// never leaves a stale lock). state.json is replaced atomically on every save. A directory
/// holding a symbolic link (at its top or in an attempt folder) is refused: the tool makes none
/// there, so one is a planted redirect of a write.
class RunDirectory {
 public:
  /// Creates the folder if needed and takes the lock; fails (infrastructure) when another
  /// process holds it, naming its pid.
  static Expected<RunDirectory> open(const std::filesystem::path& dir);

  RunDirectory(RunDirectory&& other) noexcept;
  RunDirectory& operator=(RunDirectory&& other) noexcept;
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;
  ~RunDirectory();

  const std::filesystem::path& path() const { return dir_; }
  std::filesystem::path state_file() const { return dir_ / "state.json"; }
  /// The folder of one gate attempt ("02-dp.1").
  std::filesystem::path attempt_dir(std::size_t gate_index, const std::string& gate,
                                    int attempt) const;

  Expected<void> save(const RunState& state) const;
  /// The stored state, or nullopt when the folder has none yet.
  Expected<std::optional<RunState>> load() const;

 private:
  RunDirectory(std::filesystem::path dir, int fd) : dir_(std::move(dir)), fd_(fd) {}
  std::filesystem::path dir_;
  int fd_ = -1;
};

/// Where a run records how it was started (-c, --set, --baseline, the working directory), so
/// that `resume`, `run GATE`, `report` and `baseline record` without them use the same
/// configuration from anywhere (written by run_session, read back by the commands).
constexpr const char* kInvocationFile = "invocation.json";

/// The folder name of one gate attempt: "02-dp.1" for attempt 1 of the gate at index 1.
std::string attempt_folder(std::size_t gate_index, const std::string& gate, int attempt);

/// Creates `folder` (an attempt folder) new and empty, so no rank appends to an older log. A
/// folder already there (its run's state.json was lost, or it died before saving the attempt)
/// is moved aside to "<folder>.stale-<k>", never reused or deleted; the returned note says so
/// (empty when nothing was there). Anything else at `folder` is an error naming it.
Expected<std::string> create_attempt_folder(const std::filesystem::path& folder);

/// The pid of the process that holds the run directory's lock now (0 when it is held but the
/// pid is unknown), or nullopt when no process holds it. Read from /proc/locks, so that asking
/// never competes with a run for the lock.
std::optional<long> lock_holder(const std::filesystem::path& dir);

/// Reads a run's state without taking the lock (for `status`, which must work during a run).
Expected<RunState> read_run_state(const std::filesystem::path& dir);

/// "20261129-114427" (UTC) — sortable, one per second; `suffix` disambiguates.
std::string make_run_id(std::time_t when, int suffix = 0);

/// Points `reports_dir/latest` at `run_dir` (a relative symlink, replaced atomically). Anything
/// at `latest` that is not such a link of ours is left alone, and the error says so.
Expected<void> point_latest(const std::filesystem::path& reports_dir,
                            const std::filesystem::path& run_dir);

}  // namespace bigmac::run
