#pragma once

#include <cstdint>
#include <filesystem>

#include "core/error.h"

namespace bigmac {

/// Space held back on a disk: a file of `bytes` allocated blocks, so that a disk filled while a
/// gate runs (a checkpoint, a flood of log lines) still leaves room to save the run state and
/// write the reports that say the disk is full. write_file_atomically frees every held reserve
/// and tries once more when a write finds the disk full. The file is removed when the reserve is
/// destroyed (or released).
class DiskReserve {
 public:
  /// Allocates `bytes` at `file` (posix_fallocate). An error when the disk has no such room.
  static Expected<DiskReserve> hold(const std::filesystem::path& file, std::uint64_t bytes);

  DiskReserve() = default;
  DiskReserve(DiskReserve&& other) noexcept;
  DiskReserve& operator=(DiskReserve&& other) noexcept;
  DiskReserve(const DiskReserve&) = delete;
  DiskReserve& operator=(const DiskReserve&) = delete;
  ~DiskReserve();

  const std::filesystem::path& file() const { return file_; }

 private:
  void drop();  ///< removes the file (if still there) and forgets it

  std::filesystem::path file_;
};

/// Frees every reserve this process holds (their files removed). True when one was freed, so a
/// write that found the disk full may be tried again.
bool release_disk_reserves();

/// True for the errno values of a full disk or a used-up quota (ENOSPC, EDQUOT).
bool is_disk_full(int err);

}  // namespace bigmac
