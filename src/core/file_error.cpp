#include "core/file_error.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace bigmac {

Error file_error(const std::filesystem::path& path, std::string_view what, int err,
                 ErrorKind kind) {
  std::string hint;
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      kind = ErrorKind::kInfrastructure;
      hint = "the disk (or your quota) is full: free space there, or choose a path on another disk";
      break;
    case EROFS:
      kind = ErrorKind::kInfrastructure;
      hint = "the file system is read-only: choose a path on a writable one";
      break;
    case ELOOP:
      hint =
          "it is a symbolic link, and bigmac-bringup never writes through one: remove the "
          "link";
      break;
    case EACCES:
    case EPERM:
      hint = "check the permissions of the file and its directory";
      break;
    default:
      break;
  }
  Error e = make_error(kind, fmt::format("{}: {}", what, std::strerror(err)), std::move(hint));
  e.file = path.string();
  return e;
}

std::string_view file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISREG(mode)) return "a regular file";
  return "something else";
}

}  // namespace bigmac
