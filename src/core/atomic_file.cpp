#include "core/atomic_file.h"

#include <stdio.h>
#include <unistd.h>

#include <cerrno>

#include "core/file_creation.h"
#include "core/file_error.h"

namespace bigmac {

Expected<void> write_file_atomically(const std::filesystem::path& path, std::string_view contents) {
  auto tmp = create_temporary_file(path);
  if (!tmp) return tl::unexpected(tmp.error());
  auto discard = [&](std::string_view what, int err, const std::filesystem::path& where) {
    ::unlink(tmp->path.c_str());
    return tl::unexpected(file_error(where, what, err));
  };
  const char* data = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(tmp->fd.get(), data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return discard("cannot write", errno, tmp->path);
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(tmp->fd.get()) != 0) return discard("cannot flush", errno, tmp->path);
  if (::close(tmp->fd.release()) != 0) return discard("cannot flush", errno, tmp->path);
  if (::rename(tmp->path.c_str(), path.c_str()) != 0) {
    return discard("cannot rename into place", errno, path);
  }
  return {};
}

}  // namespace bigmac
