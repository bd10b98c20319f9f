#include "core/input_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "core/file_error.h"

namespace bigmac {

Expected<Fd> open_input_file(const std::filesystem::path& path) {
  // Non-blocking so that opening a FIFO without a writer returns at once; cleared below.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) {
    const int err = errno;
    Error e = file_error(path, "cannot open", err);
    // A read follows links; ELOOP here is a loop of them, not a refused link.
    if (err == ELOOP) {
      e.hint =
          "a symbolic link on this path points to itself or into a loop of links: fix or "
          "remove the link";
    }
    return tl::unexpected(std::move(e));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return tl::unexpected(file_error(path, "cannot stat", errno));
  if (!S_ISREG(st.st_mode)) {
    Error e =
        make_error(ErrorKind::kInput,
                   fmt::format("cannot read: it is {}, not a regular file", file_kind(st.st_mode)),
                   S_ISDIR(st.st_mode) ? "name a file inside it" : "give a regular file");
    e.file = path.string();
    return tl::unexpected(e);
  }
  if (::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK) != 0) {
    return tl::unexpected(file_error(path, "cannot configure", errno));
  }
  return fd;
}

Expected<InputStream> open_input_stream(const std::filesystem::path& path) {
  auto fd = open_input_file(path);
  if (!fd) return tl::unexpected(fd.error());
  InputStream stream(::fdopen(fd->get(), "rb"));
  if (!stream) return tl::unexpected(file_error(path, "cannot open", errno));
  fd->release();  // the stream owns it now
  return stream;
}

Expected<std::string> read_file(const std::filesystem::path& path, std::uintmax_t max_bytes) {
  auto fd = open_input_file(path);
  if (!fd) return tl::unexpected(fd.error());
  struct stat st {};
  if (::fstat(fd->get(), &st) != 0) return tl::unexpected(file_error(path, "cannot stat", errno));
  auto too_big = [&](std::uintmax_t size) {
    Error e = make_error(ErrorKind::kInput,
                         fmt::format("cannot read: it is {} bytes, more than the {} MiB such a "
                                     "file may have",
                                     size, max_bytes >> 20),
                         "is this the right file?");
    e.file = path.string();
    return tl::unexpected(e);
  };
  if (static_cast<std::uintmax_t>(st.st_size) > max_bytes) {
    return too_big(static_cast<std::uintmax_t>(st.st_size));
  }
  std::string text;
  text.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd->get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return tl::unexpected(file_error(path, "cannot read", errno));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    // A file that grows while it is read (or a /proc file reporting size 0) stays bounded too.
    if (text.size() > max_bytes) return too_big(text.size());
  }
  return text;
}

}  // namespace bigmac
