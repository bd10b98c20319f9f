#include "run/run_directory.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/atomic_file.h"
#include "core/file_creation.h"
#include "core/file_error.h"
#include "core/json_file.h"

namespace bigmac::run {
namespace {

Error io_error(const std::filesystem::path& path, std::string message,
               ErrorKind kind = ErrorKind::kInfrastructure) {
  Error e = make_error(kind, std::move(message));
  e.file = path.string();
  return e;
}

// Symbolic links among the entries of a run directory and of its attempt folders, as
// "name -> target". The tool makes none there; one found was planted to redirect a write.
std::vector<std::string> planted_links(const std::filesystem::path& dir) {
  std::vector<std::string> links;
  auto scan = [&](const std::filesystem::path& folder, const std::string& prefix, bool deeper,
                  auto& self) -> void {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(folder, ec)) {
      const std::string name = prefix + entry.path().filename().string();
      if (entry.is_symlink(ec)) {
        links.push_back(name + " -> " + std::filesystem::read_symlink(entry.path(), ec).string());
      } else if (deeper && entry.is_directory(ec)) {
        self(entry.path(), name + "/", false, self);
      }
    }
  };
  scan(dir, "", true, scan);
  std::sort(links.begin(), links.end());
  return links;
}

}  // namespace

Expected<RunDirectory> RunDirectory::open(const std::filesystem::path& dir) {
  std::error_code ec;
  if (dir.has_parent_path()) std::filesystem::create_directories(dir.parent_path(), ec);
  if (ec) {
    // A path through a file is a wrong --run-dir; a permission or a full disk is the machine's.
    const bool wrong_path = ec.value() == ENOTDIR || ec.value() == EEXIST || ec.value() == ELOOP;
    return tl::unexpected(file_error(dir.parent_path(), "cannot create the run directory's parent",
                                     ec.value(),
                                     wrong_path ? ErrorKind::kInput : ErrorKind::kInfrastructure));
  }
  if (auto made = create_directory(dir, /*exclusive=*/false); !made) {
    Error e = made.error();
    e.message = "cannot use the run directory: " + e.message;
    return tl::unexpected(e);
  }
  if (auto links = planted_links(dir); !links.empty()) {
    Error e = make_error(
        ErrorKind::kInput,
        fmt::format("the run directory holds symbolic link{} ({}): bigmac-bringup writes only "
                    "files of its own there and never follows a link in it",
                    links.size() == 1 ? "" : "s", fmt::join(links, ", ")),
        "remove the links, or start a new run directory with --run-dir");
    e.file = dir.string();
    return tl::unexpected(e);
  }
  const std::filesystem::path lock = dir / ".lock";
  auto locked = create_file(lock, Existing::kKeep);
  if (!locked) return tl::unexpected(locked.error());
  const int fd = locked->release();
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char pid[32] = {};
    const ssize_t n = ::pread(fd, pid, sizeof pid - 1, 0);
    ::close(fd);
    if (err == EWOULDBLOCK) {
      Error e =
          io_error(dir, fmt::format("another bigmac-bringup (pid {}) is using this run directory",
                                    n > 0 ? std::string(pid, static_cast<std::size_t>(n)) : "?"));
      e.hint = "wait for it to finish, or use another --run-dir";
      return tl::unexpected(e);
    }
    return tl::unexpected(io_error(lock, fmt::format("cannot lock: {}", std::strerror(err))));
  }
  // The pid is for the message of whoever is locked out; the lock itself is the flock.
  const std::string me = std::to_string(::getpid());
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) < 0) {
    // Not fatal: the lock holds without the pid text.
  }
  return RunDirectory(dir, fd);
}

std::optional<long> lock_holder(const std::filesystem::path& dir) {
  struct stat st {};
  if (::stat((dir / ".lock").c_str(), &st) != 0) return std::nullopt;
  // /proc/locks: "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234567 0 EOF" (device in hex).
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    std::istringstream in(line);
    std::string id, type, mode, access, device;
    long pid = 0;
    if (!(in >> id >> type >> mode >> access >> pid >> device)) continue;
    if (type != "FLOCK") continue;
    const std::size_t colon = device.rfind(':');
    if (colon == std::string::npos) continue;
    if (std::strtoull(device.c_str() + colon + 1, nullptr, 10) != st.st_ino) continue;
    return pid;
  }
  return std::nullopt;
}

RunDirectory::RunDirectory(RunDirectory&& other) noexcept
    : dir_(std::move(other.dir_)), fd_(std::exchange(other.fd_, -1)) {}

RunDirectory& RunDirectory::operator=(RunDirectory&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    dir_ = std::move(other.dir_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

RunDirectory::~RunDirectory() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the flock
}

std::filesystem::path RunDirectory::attempt_dir(std::size_t gate_index, const std::string& gate,
                                                int attempt) const {
  return dir_ / attempt_folder(gate_index, gate, attempt);
}

std::string attempt_folder(std::size_t gate_index, const std::string& gate, int attempt) {
  return fmt::format("{:02}-{}.{}", gate_index + 1, gate, attempt);
}

Expected<std::string> create_attempt_folder(const std::filesystem::path& folder) {
  if (create_directory(folder, /*exclusive=*/true)) return std::string();
  // The folder is there already: left by a run of this directory whose state.json is gone (or
  // by one killed before it saved the attempt). Reusing it would mix its logs with this
  // attempt's, so it is kept under another name and this attempt gets a new folder.
  // Only a folder is an earlier attempt's; a file or link there is an error naming it.
  std::error_code ec;
  if (!std::filesystem::is_directory(std::filesystem::symlink_status(folder, ec))) {
    return tl::unexpected(create_directory(folder, true).error());
  }
  std::filesystem::path aside;
  for (int k = 1;; ++k) {
    aside = folder;
    aside += fmt::format(".stale-{}", k);
    if (!std::filesystem::exists(std::filesystem::symlink_status(aside, ec))) break;
  }
  if (::rename(folder.c_str(), aside.c_str()) != 0) {
    return tl::unexpected(io_error(
        folder, fmt::format("cannot move the earlier attempt aside: {}", std::strerror(errno))));
  }
  if (auto made = create_directory(folder, true); !made) return tl::unexpected(made.error());
  return fmt::format("{} was left by an earlier attempt this run no longer records; kept as {}",
                     folder.filename().string(), aside.filename().string());
}

Expected<void> RunDirectory::save(const RunState& state) const {
  return write_file_atomically(state_file(), json_text(to_json(state), 2) + "\n");
}

Expected<std::optional<RunState>> RunDirectory::load() const {
  std::error_code ec;
  if (!std::filesystem::exists(state_file(), ec)) return std::optional<RunState>{};
  auto state = read_run_state(dir_);
  if (!state) return tl::unexpected(state.error());
  return std::optional<RunState>(std::move(*state));
}

Expected<RunState> read_run_state(const std::filesystem::path& dir) {
  const std::filesystem::path file = dir / "state.json";
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    Error e = make_error(ErrorKind::kInput, "no state.json: not a run directory",
                         "run directories are reports/<run-id>/; `run-all` makes one");
    e.file = dir.string();
    return tl::unexpected(e);
  }
  auto json = read_json_file(file);
  if (!json) return tl::unexpected(json.error());
  return run_state_from_json(*json, file.string());
}

std::string make_run_id(std::time_t when, int suffix) {
  std::tm tm{};
  ::gmtime_r(&when, &tm);
  std::string id = fmt::format("{:04}{:02}{:02}-{:02}{:02}{:02}", tm.tm_year + 1900, tm.tm_mon + 1,
                               tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return suffix > 0 ? fmt::format("{}-{}", id, suffix) : id;
}

Expected<void> point_latest(const std::filesystem::path& reports_dir,
                            const std::filesystem::path& run_dir) {
  const std::filesystem::path link = reports_dir / "latest";
  // Only our own link is replaced: one naming a sibling folder. A file, a folder or a link
  // someone made to elsewhere under that name is theirs.
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(link, ec);
  if (std::filesystem::exists(status)) {
    const bool ours =
        std::filesystem::is_symlink(status) &&
        std::filesystem::read_symlink(link, ec).string().find('/') == std::string::npos && !ec;
    if (!ours) {
      Error e = make_error(ErrorKind::kInput,
                           "not bigmac-bringup's link to the newest run: left as it is",
                           "remove or rename it to have `latest` point at the newest run again");
      e.file = link.string();
      return tl::unexpected(e);
    }
  }
  const std::filesystem::path tmp = reports_dir / fmt::format(".latest.{}", ::getpid());
  std::filesystem::remove(tmp, ec);
  std::filesystem::create_directory_symlink(run_dir.lexically_relative(reports_dir).empty()
                                                ? run_dir
                                                : run_dir.lexically_relative(reports_dir),
                                            tmp, ec);
  if (ec) return tl::unexpected(io_error(tmp, "cannot create symlink: " + ec.message()));
  if (::rename(tmp.c_str(), link.c_str()) != 0) {
    const int err = errno;
    std::filesystem::remove(tmp, ec);
    return tl::unexpected(io_error(link, fmt::format("cannot replace: {}", std::strerror(err))));
  }
  return {};
}

}  // namespace bigmac::run
