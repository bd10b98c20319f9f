#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace bigmac {
namespace {

Error io_error(const std::filesystem::path& path, std::string_view what, int err) {
  Error e = make_error(ErrorKind::kInput, fmt::format("{}: {}", what, std::strerror(err)));
  e.file = path.string();
  return e;
}

}  // namespace

Expected<void> write_file_atomically(const std::filesystem::path& path, std::string_view contents) {
  std::filesystem::path tmp = path;
  tmp += fmt::format(".tmp.{}", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return tl::unexpected(io_error(tmp, "cannot create", errno));
  const char* data = contents.data();
  std::size_t left = contents.size();
  while (left > 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return tl::unexpected(io_error(tmp, "cannot write", err));
    }
    data += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return tl::unexpected(io_error(tmp, "cannot flush", err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return tl::unexpected(io_error(path, "cannot rename into place", err));
  }
  return {};
}

Expected<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return tl::unexpected(io_error(path, "cannot open", errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return tl::unexpected(io_error(path, "cannot read", errno));
  return buffer.str();
}

}  // namespace bigmac
