#include "launch/process_record.h"

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/json_file.h"

namespace bigmac::launch {

Expected<void> write_process_record(const std::filesystem::path& path,
                                    const ProcessRecord& record) {
  nlohmann::json j;
  j["pgid"] = record.pgid;
  j["pids"] = record.pids;
  return write_file_atomically(path, json_text(j) + "\n");
}

Expected<std::optional<ProcessRecord>> read_process_record(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<ProcessRecord>();
  auto text = read_file(path);
  if (!text) return tl::unexpected(text.error());
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.contains("pgid") || !j["pgid"].is_number_integer()) {
    Error e =
        make_error(ErrorKind::kInput, "not a process record (expected {\"pgid\":N,\"pids\":[...]})",
                   "delete it if no earlier run is alive");
    e.file = path.string();
    return tl::unexpected(std::move(e));
  }
  ProcessRecord record;
  record.pgid = j["pgid"].get<pid_t>();
  if (j.contains("pids") && j["pids"].is_array()) {
    for (const auto& pid : j["pids"]) {
      if (pid.is_number_integer()) record.pids.push_back(pid.get<pid_t>());
    }
  }
  return std::optional<ProcessRecord>(std::move(record));
}

std::vector<proc::ProcessInfo> leftover_processes(const ProcessRecord& record) {
  std::vector<proc::ProcessInfo> out;
  if (record.pgid <= 1) return out;
  for (proc::ProcessInfo& p : proc::processes_in_group(record.pgid)) {
    if (!p.zombie()) out.push_back(std::move(p));
  }
  return out;
}

}  // namespace bigmac::launch
