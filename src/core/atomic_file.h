#pragma once

#include <filesystem>
#include <string_view>

#include "core/error.h"
#include "core/input_file.h"  // read_file, the other half of the whole-file API

namespace bigmac {

/// Writes `contents` to a new temporary file beside `path` (unpredictable name, created
/// exclusively: create_temporary_file), flushes it to disk and renames it over `path`, so a
/// reader (or a crash) never sees a half-written file and no planted link is written through.
/// The rename replaces whatever `path` names, a symbolic link included, and never follows it.
Expected<void> write_file_atomically(const std::filesystem::path& path, std::string_view contents);

}  // namespace bigmac
