#include "launch/device_inventory.h"

#include <cstdlib>

#include "core/trim.h"
#include "proc/command_output.h"
#include "proc/program_path.h"

namespace bigmac::launch {

std::vector<std::string> parse_cuda_visible_devices(std::string_view value) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t end = value.find(',', start);
    if (end == std::string_view::npos) end = value.size();
    std::string_view item = trim(value.substr(start, end - start));
    // CUDA stops at the first invalid entry; "-1" is the usual way to hide every device.
    if (item.empty() || item.front() == '-') break;
    out.emplace_back(item);
    start = end + 1;
  }
  return out;
}

DeviceInventory probe_devices(const std::optional<std::string>& cuda_visible) {
  DeviceInventory inventory;
  if (cuda_visible) {
    inventory.cuda_devices = parse_cuda_visible_devices(*cuda_visible);
    inventory.source = "CUDA_VISIBLE_DEVICES";
    return inventory;
  }
  auto smi = proc::find_program("nvidia-smi");
  if (!smi) {
    inventory.source = "none found";
    return inventory;
  }
  auto smi_run = proc::run_command({*smi, "--query-gpu=index", "--format=csv,noheader"},
                                   std::chrono::seconds(20));
  inventory.source = "nvidia-smi";
  if (!smi_run || !smi_run->ok()) {
    inventory.source = "nvidia-smi (failed)";
    return inventory;
  }
  const std::string& out = smi_run->out;
  std::size_t start = 0;
  while (start < out.size()) {
    std::size_t end = out.find('\n', start);
    if (end == std::string::npos) end = out.size();
    std::string line = out.substr(start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) inventory.cuda_devices.push_back(line);
    start = end + 1;
  }
  return inventory;
}

DeviceInventory probe_devices() {
  const char* value = std::getenv("CUDA_VISIBLE_DEVICES");
  return probe_devices(value ? std::optional<std::string>(value) : std::nullopt);
}

}  // namespace bigmac::launch
