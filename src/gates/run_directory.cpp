#include "gates/run_directory.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/atomic_file.h"

namespace bigmac::gates {
namespace {

Error io_error(const std::filesystem::path& path, std::string message,
               ErrorKind kind = ErrorKind::kInfrastructure) {
  Error e = make_error(kind, std::move(message));
  e.file = path.string();
  return e;
}

}  // namespace

Expected<RunDirectory> RunDirectory::open(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return tl::unexpected(io_error(dir, "cannot create the run directory: " + ec.message()));
  const std::filesystem::path lock = dir / ".lock";
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return tl::unexpected(io_error(lock, fmt::format("cannot open: {}", std::strerror(errno))));
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

Expected<void> RunDirectory::save(const RunState& state) const {
  return write_file_atomically(state_file(), to_json(state).dump(2) + "\n");
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
  auto text = read_file(file);
  if (!text) {
    Error e = text.error();
    e.hint = "is this a run directory? (reports/<run-id>/ holds state.json)";
    return tl::unexpected(e);
  }
  const nlohmann::json json = nlohmann::json::parse(*text, nullptr, false);
  if (json.is_discarded()) return tl::unexpected(io_error(file, "invalid JSON", ErrorKind::kInput));
  return run_state_from_json(json, file.string());
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
  const std::filesystem::path tmp = reports_dir / fmt::format(".latest.{}", ::getpid());
  std::error_code ec;
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

}  // namespace bigmac::gates
