#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "proc/pipe.h"

namespace bigmac::launch {

/// Follows a file another process appends to (a trainer's `--log-file`): each read() returns the
/// bytes added since the last one. The file may not exist yet; a file that shrinks (truncated
/// by a restarted writer) is read again from its start. Reads never block.
class LogFileTail {
 public:
  explicit LogFileTail(std::filesystem::path path) : path_(std::move(path)) {}
  /// A file whose name is known only once its writer made it (torchrun's per-worker files
  /// lie under a folder with a random name): `locate` is asked until it returns a path.
  explicit LogFileTail(std::function<std::filesystem::path()> locate)
      : locate_(std::move(locate)) {}

  /// Appends what is new (at most `limit` bytes) to `out`; returns how many bytes were added.
  std::size_t read(std::string& out, std::size_t limit = std::size_t{4} << 20);

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::function<std::filesystem::path()> locate_;
  proc::Fd fd_;
  std::size_t offset_ = 0;
};

}  // namespace bigmac::launch
