#include "trainer/checkpoint_file.h"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <stdexcept>

#include "core/atomic_file.h"

namespace bigmac::trainer {

std::optional<std::filesystem::path> checkpoint_dir(const std::string& configured,
                                                    const std::string& log_file) {
  if (!configured.empty()) return std::filesystem::path(configured);
  if (log_file.empty() || log_file == "-") return std::nullopt;
  auto parent = std::filesystem::path(log_file).parent_path();
  return parent.empty() ? std::filesystem::path(".") : parent;
}

std::string checkpoint_bytes(const std::vector<std::pair<std::string, at::Tensor>>& named,
                             int step) {
  std::string out = fmt::format("bigmac-ckpt v1 step={}\n", step);
  for (const auto& [name, param] : named) {
    auto values = param.detach().to(at::kCPU, at::kFloat).contiguous();
    out += fmt::format("{} [{}]\n", name, fmt::join(values.sizes(), ","));
    out.append(static_cast<const char*>(values.data_ptr()),
               static_cast<std::size_t>(values.numel()) * sizeof(float));
    out += '\n';
  }
  return out;
}

std::filesystem::path write_checkpoint(const std::filesystem::path& dir,
                                       const std::vector<std::pair<std::string, at::Tensor>>& named,
                                       int step) {
  std::filesystem::create_directories(dir);
  auto path = dir / fmt::format("bigmac-step{:06d}.ckpt", step);
  auto written = write_file_atomically(path, checkpoint_bytes(named, step));
  if (!written) throw std::runtime_error("checkpoint: " + written.error().format());
  return path;
}

}  // namespace bigmac::trainer
