#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bigmac::launch {

/// The CUDA devices this host offers the ranks, and how we know.
struct DeviceInventory {
  std::vector<std::string> cuda_devices;  ///< ids as CUDA_VISIBLE_DEVICES would name them
  std::string source;                     ///< "CUDA_VISIBLE_DEVICES", "nvidia-smi", or "none found"
};

/// Parses a CUDA_VISIBLE_DEVICES value: "0,2", "GPU-uuid,...", "" (none), "-1" (none).
std::vector<std::string> parse_cuda_visible_devices(std::string_view value);

/// CUDA_VISIBLE_DEVICES when set (`cuda_visible` is its value), else the GPUs nvidia-smi lists
/// when it is installed, else none. nvidia-smi is run through the process layer with a limit.
DeviceInventory probe_devices(const std::optional<std::string>& cuda_visible);

/// probe_devices with this process's CUDA_VISIBLE_DEVICES.
DeviceInventory probe_devices();

}  // namespace bigmac::launch
