#pragma once

#include <filesystem>

#include "core/error.h"
#include "core/fd.h"

namespace bigmac {

/// What `create_file` does when the path already names something.
enum class Existing {
  kRefuse,    ///< fail: the file must be new (O_EXCL; nothing planted there is ever followed)
  kTruncate,  ///< reuse a regular file, emptied
  kKeep,      ///< reuse a regular file as it is (a lock file)
  kAppend,    ///< reuse a regular file; every write goes to its end (a log)
};

/// The one way the tool opens a file it writes: state, reports, the run lock, rank output and
/// logs. It never writes through a symbolic link (O_NOFOLLOW, or O_EXCL for kRefuse), never into
/// a FIFO or device (opened non-blocking, then checked to be a regular file), and never into a
/// file with a second hard link, which could be another file planted under our name. Errors name
/// the path and say why (file_error).
Expected<Fd> create_file(const std::filesystem::path& path, Existing existing,
                         unsigned mode = 0644);

/// A new, exclusively created file beside `target` under a name nobody can predict
/// (`.<target name>.<16 random hex digits>.tmp`): what an atomic write fills, then renames over
/// `target`.
struct TemporaryFile {
  Fd fd;
  std::filesystem::path path;
};
Expected<TemporaryFile> create_temporary_file(const std::filesystem::path& target);

/// Creates the directory `path` (its parent must exist). With `exclusive`, anything already at
/// `path` is an error (EEXIST), so the directory is known to be new and empty; without it an
/// existing directory (or a link to one: the caller named the path) is accepted, any other
/// file is not.
Expected<void> create_directory(const std::filesystem::path& path, bool exclusive);

}  // namespace bigmac
