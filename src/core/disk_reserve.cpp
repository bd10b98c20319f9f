#include "core/disk_reserve.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <vector>

#include "core/file_error.h"

namespace bigmac {
namespace fs = std::filesystem;
namespace {

// The files of every reserve held, so a writer anywhere can free them all.
std::mutex g_mutex;
std::vector<fs::path>& held() {
  static std::vector<fs::path> files;
  return files;
}

void forget(const fs::path& file) {
  std::lock_guard lock(g_mutex);
  std::erase(held(), file);
}

}  // namespace

bool is_disk_full(int err) { return err == ENOSPC || err == EDQUOT; }

Expected<DiskReserve> DiskReserve::hold(const fs::path& file, std::uint64_t bytes) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return tl::unexpected(file_error(file, "cannot hold disk space", errno));
  const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  ::close(fd);
  if (err != 0) {
    ::unlink(file.c_str());
    return tl::unexpected(file_error(file, "cannot hold disk space", err));
  }
  DiskReserve reserve;
  reserve.file_ = file;
  std::lock_guard lock(g_mutex);
  held().push_back(file);
  return reserve;
}

DiskReserve::DiskReserve(DiskReserve&& other) noexcept : file_(std::move(other.file_)) {
  other.file_.clear();
}

DiskReserve& DiskReserve::operator=(DiskReserve&& other) noexcept {
  if (this != &other) {
    drop();
    file_ = std::move(other.file_);
    other.file_.clear();
  }
  return *this;
}

DiskReserve::~DiskReserve() { drop(); }

void DiskReserve::drop() {
  if (file_.empty()) return;
  ::unlink(file_.c_str());
  forget(file_);
  file_.clear();
}

bool release_disk_reserves() {
  std::lock_guard lock(g_mutex);
  bool freed = false;
  for (const fs::path& file : held()) freed = ::unlink(file.c_str()) == 0 || freed;
  held().clear();
  return freed;
}

}  // namespace bigmac
