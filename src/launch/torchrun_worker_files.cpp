#include "launch/torchrun_worker_files.h"

#include <string>

namespace bigmac::launch {
namespace fs = std::filesystem;

fs::path torchrun_worker_file(const fs::path& torchrun_log_dir, int local_rank,
                              std::string_view name) {
  std::error_code ec;
  fs::path newest;
  fs::file_time_type newest_time;
  for (const auto& run : fs::directory_iterator(torchrun_log_dir, ec)) {
    std::error_code inner;
    for (const auto& attempt : fs::directory_iterator(run.path(), inner)) {
      const fs::path file = attempt.path() / std::to_string(local_rank) / name;
      std::error_code time_ec;
      auto time = fs::last_write_time(file, time_ec);
      if (time_ec) continue;
      if (newest.empty() || time > newest_time) {
        newest = file;
        newest_time = time;
      }
    }
  }
  return newest;
}

}  // namespace bigmac::launch
