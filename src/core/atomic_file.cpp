#include "core/atomic_file.h"

#include <fmt/format.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "core/disk_reserve.h"
#include "core/file_creation.h"
#include "core/file_error.h"

namespace bigmac {

namespace {

// What is at `path` must be a regular file or nothing: a rename would replace a device node
// (`-o /dev/null` as root), a FIFO or a link (`-o /dev/stdout`) with a regular file.
Expected<void> check_target(const std::filesystem::path& path) {
  struct stat there {};
  if (::lstat(path.c_str(), &there) != 0) {
    if (errno == ENOENT) return {};
    return tl::unexpected(file_error(path, "cannot stat", errno));
  }
  if (S_ISREG(there.st_mode)) return {};
  Error e = make_error(
      ErrorKind::kInput,
      fmt::format("cannot write: it is {}, not a regular file", file_kind(there.st_mode)),
      S_ISLNK(there.st_mode)
          ? "bigmac-bringup neither writes through a symbolic link nor replaces one: name the "
            "file it points to, or a new path"
          : "name a regular file or a new path; it is left as it is");
  e.file = path.string();
  return tl::unexpected(std::move(e));
}

}  // namespace

namespace {

// One try: a temporary file beside `path`, written, flushed and renamed over it. An error names
// `path` (the temporary file is the tool's business) and keeps the errno for the caller.
Expected<void> write_once(const std::filesystem::path& path, std::string_view contents, int& err) {
  err = 0;
  auto tmp = create_temporary_file(path);
  if (!tmp) return tl::unexpected(tmp.error());
  auto discard = [&](std::string_view what, int e) {
    err = e;
    ::unlink(tmp->path.c_str());
    return tl::unexpected(file_error(path, what, e));
  };
  const char* data = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(tmp->fd.get(), data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return discard("cannot write", errno);
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(tmp->fd.get()) != 0) return discard("cannot flush", errno);
  if (::close(tmp->fd.release()) != 0) return discard("cannot flush", errno);
  if (::rename(tmp->path.c_str(), path.c_str()) != 0) {
    return discard("cannot rename into place", errno);
  }
  return {};
}

}  // namespace

Expected<void> write_file_atomically(const std::filesystem::path& path, std::string_view contents) {
  if (auto ok = check_target(path); !ok) return ok;
  int err = 0;
  auto written = write_once(path, contents, err);
  // A disk filled while the gate ran: the space held back for this moment saves the state.
  if (!written && is_disk_full(err) && release_disk_reserves()) {
    written = write_once(path, contents, err);
  }
  return written;
}

}  // namespace bigmac
