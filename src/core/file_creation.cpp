#include "core/file_creation.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>

#include "core/file_error.h"

namespace bigmac {
namespace {

// 64 unpredictable bits; the kernel's generator, else a mix that is at least unique per call
// (O_EXCL keeps even a predictable name safe from being followed).
std::uint64_t random_bits() {
  std::uint64_t bits = 0;
  if (::getrandom(&bits, sizeof bits, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof bits)) {
    return bits;
  }
  static std::atomic<std::uint64_t> counter{0};
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return (static_cast<std::uint64_t>(now) * 0x9E3779B97F4A7C15ULL) ^
         (static_cast<std::uint64_t>(::getpid()) << 32) ^ counter.fetch_add(1);
}

// A write the machine refuses (permission, full or read-only disk) is infrastructure, exit 3;
// a wrong path (a link, a directory in the way) is bad input, exit 2.
Error write_error(const std::filesystem::path& path, std::string_view what, int err) {
  const bool machine = err == EACCES || err == EPERM;
  return file_error(path, what, err, machine ? ErrorKind::kInfrastructure : ErrorKind::kInput);
}

}  // namespace

Expected<Fd> create_file(const std::filesystem::path& path, Existing existing, unsigned mode) {
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
  switch (existing) {
    case Existing::kRefuse:
      flags |= O_EXCL;
      break;
    case Existing::kTruncate:
      break;  // truncated below, once the file is known to be a regular one of ours
    case Existing::kKeep:
      flags = (flags & ~O_WRONLY) | O_RDWR;
      break;
    case Existing::kAppend:
      flags |= O_APPEND;
      break;
  }
  Fd fd(::open(path.c_str(), flags, static_cast<mode_t>(mode)));
  if (!fd) {
    const int err = errno;
    struct stat there {};
    if (err == ENXIO && ::lstat(path.c_str(), &there) == 0) {
      // A FIFO without a reader (opened non-blocking, so at once instead of waiting for one).
      Error e = make_error(
          ErrorKind::kInput,
          fmt::format("cannot write: it is {}, not a regular file", file_kind(there.st_mode)),
          "remove it, or choose another run directory");
      e.file = path.string();
      return tl::unexpected(e);
    }
    if (err == EEXIST) {
      return tl::unexpected(write_error(path,
                                        "cannot create: it exists already (refusing to "
                                        "reuse or follow it)",
                                        err));
    }
    return tl::unexpected(write_error(path, "cannot create", err));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return tl::unexpected(write_error(path, "cannot stat", errno));
  if (!S_ISREG(st.st_mode)) {
    Error e =
        make_error(ErrorKind::kInput,
                   fmt::format("cannot write: it is {}, not a regular file", file_kind(st.st_mode)),
                   "remove it, or choose another run directory");
    e.file = path.string();
    return tl::unexpected(e);
  }
  if (st.st_nlink > 1) {
    Error e = make_error(ErrorKind::kInput,
                         fmt::format("cannot write: it has {} hard links, so writing it would "
                                     "change another file too",
                                     st.st_nlink),
                         "remove it, or choose another run directory");
    e.file = path.string();
    return tl::unexpected(e);
  }
  if (existing == Existing::kTruncate && st.st_size > 0 && ::ftruncate(fd.get(), 0) != 0) {
    return tl::unexpected(write_error(path, "cannot truncate", errno));
  }
  // Writers expect ordinary blocking writes; non-blocking was only for the open itself.
  if (::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK) != 0) {
    return tl::unexpected(write_error(path, "cannot configure", errno));
  }
  return fd;
}

Expected<TemporaryFile> create_temporary_file(const std::filesystem::path& target) {
  const std::filesystem::path dir = target.parent_path();
  const std::string name = target.filename().string();
  // A clash of 64 random bits means the generator is not random; stop rather than spin.
  for (int tries = 0;; ++tries) {
    std::filesystem::path tmp = dir / fmt::format(".{}.{:016x}.tmp", name, random_bits());
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (fd) return TemporaryFile{std::move(fd), std::move(tmp)};
    const int err = errno;
    // Named by the file the caller wants written: the temporary name means nothing to them.
    if (err != EEXIST || tries >= 16) {
      return tl::unexpected(
          write_error(target, "cannot write: no new file can be created beside it", err));
    }
  }
}

Expected<void> create_directory(const std::filesystem::path& path, bool exclusive) {
  if (::mkdir(path.c_str(), 0755) == 0) return {};
  const int err = errno;
  if (err != EEXIST || exclusive) {
    return tl::unexpected(write_error(path, "cannot create the directory", err));
  }
  // The caller named this path: a link to a directory is followed.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return tl::unexpected(write_error(path, "cannot stat", errno));
  }
  if (!S_ISDIR(st.st_mode)) {
    Error e =
        make_error(ErrorKind::kInput,
                   fmt::format("cannot use it as a directory: it is {}", file_kind(st.st_mode)),
                   "remove it, or choose another run directory");
    e.file = path.string();
    return tl::unexpected(e);
  }
  return {};
}

}  // namespace bigmac
