#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string_view>

#include "core/error.h"

namespace bigmac {

/// An error about `path` from a failed system call: "`what`: <strerror>", with a hint where the
/// errno says what to do (a full disk, a symbolic link refused, a permission). A full or
/// read-only disk is infrastructure (exit 3) whatever `kind` says; the rest keep `kind`.
Error file_error(const std::filesystem::path& path, std::string_view what, int err,
                 ErrorKind kind = ErrorKind::kInput);

/// What a st_mode says a file is, for messages: "a directory", "a FIFO (named pipe)", ...
std::string_view file_kind(mode_t mode);

}  // namespace bigmac
