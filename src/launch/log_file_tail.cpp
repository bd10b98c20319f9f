#include "launch/log_file_tail.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>

namespace bigmac::launch {

std::size_t LogFileTail::read(std::string& out, std::size_t limit) {
  if (path_.empty() && locate_) path_ = locate_();
  if (path_.empty()) return 0;
  if (!fd_) {
    fd_.reset(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd_) return 0;
    offset_ = 0;
  }
  struct stat st {};
  if (::fstat(fd_.get(), &st) == 0 && static_cast<std::size_t>(st.st_size) < offset_) offset_ = 0;
  std::array<char, 64 * 1024> buffer;
  std::size_t added = 0;
  while (added < limit) {
    ssize_t n = ::pread(fd_.get(), buffer.data(), buffer.size(), static_cast<off_t>(offset_));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buffer.data(), static_cast<std::size_t>(n));
    offset_ += static_cast<std::size_t>(n);
    added += static_cast<std::size_t>(n);
  }
  return added;
}

}  // namespace bigmac::launch
