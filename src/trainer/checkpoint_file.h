#pragma once

#include <ATen/Tensor.h>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bigmac::trainer {

/// Where checkpoints go: `configured` ([train] checkpoint_dir) when set, else beside the log
/// file; none when the log goes to stdout and no directory is configured.
std::optional<std::filesystem::path> checkpoint_dir(const std::string& configured,
                                                    const std::string& log_file);

/// A flat checkpoint of what a rank holds: a header line, then per parameter its name, shape and
/// float32 bytes.
std::string checkpoint_bytes(const std::vector<std::pair<std::string, at::Tensor>>& named,
                             int step);

/// Writes `dir`/bigmac-step<step>.ckpt atomically and returns its path; throws when it cannot.
std::filesystem::path write_checkpoint(const std::filesystem::path& dir,
                                       const std::vector<std::pair<std::string, at::Tensor>>& named,
                                       int step);

}  // namespace bigmac::trainer
