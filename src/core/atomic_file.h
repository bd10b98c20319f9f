#pragma once

#include <filesystem>
#include <string_view>

#include "core/error.h"

namespace bigmac {

/// Writes `contents` to a temporary file beside `path`, flushes it to disk and renames it over
/// `path`, so a reader (or a crash) never sees a half-written file.
Expected<void> write_file_atomically(const std::filesystem::path& path, std::string_view contents);

/// Reads a whole file; the error names the file and the reason.
Expected<std::string> read_file(const std::filesystem::path& path);

}  // namespace bigmac
