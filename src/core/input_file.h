#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "core/error.h"
#include "core/fd.h"

namespace bigmac {

/// Opens `path` for reading when it is a regular file (a symbolic link to one is fine). A
/// directory, FIFO, socket or device is refused with an input error (exit 2) saying what it
/// is: a FIFO would block the open or the read forever and /dev/zero never ends.
Expected<Fd> open_input_file(const std::filesystem::path& path);

/// open_input_file as a stdio stream, for readers that go through a file in chunks (logs).
struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using InputStream = std::unique_ptr<std::FILE, FileCloser>;
Expected<InputStream> open_input_stream(const std::filesystem::path& path);

/// The most `read_file` reads by default: configuration, state, baselines and reports are far
/// smaller; a bigger file is a mistake, not something to load into memory.
inline constexpr std::uintmax_t kMaxInputFileBytes = std::uintmax_t{256} << 20;

/// Reads a whole regular file of at most `max_bytes`; the error names the file and the reason.
Expected<std::string> read_file(const std::filesystem::path& path,
                                std::uintmax_t max_bytes = kMaxInputFileBytes);

}  // namespace bigmac
