#pragma once

#include <filesystem>
#include <string_view>

#include "core/error.h"
#include "core/input_file.h"  // read_file, the other half of the whole-file API

namespace bigmac {

/// Writes `contents` to a new temporary file beside `path` (unpredictable name, created
/// exclusively: create_temporary_file), flushes it to disk and renames it over `path`, so a
/// reader (or a crash) never sees a half-written file and no planted link is written through.
/// `path` must name a regular file or nothing: a symbolic link, a device, a FIFO or a directory
/// there is an error (bad input) and is left as it is, never followed and never replaced.
Expected<void> write_file_atomically(const std::filesystem::path& path, std::string_view contents);

}  // namespace bigmac
