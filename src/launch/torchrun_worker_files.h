#pragma once

#include <filesystem>
#include <string_view>

namespace bigmac::launch {

/// The file `name` (`stdout.log`, `stderr.log`) that torchrun keeps for one local rank when it
/// redirects the worker's output: `<log_dir>/<run id>_<random>/attempt_<n>/<local_rank>/<name>`
/// (torch.distributed.elastic's LocalElasticAgent, 1.13 and later), the newest attempt's.
/// These files hold everything the worker wrote, unlike the console copy (--tee), whose
/// tailer may stop before the lines a worker flushes at exit. Empty when none exists yet.
std::filesystem::path torchrun_worker_file(const std::filesystem::path& torchrun_log_dir,
                                           int local_rank, std::string_view name);

}  // namespace bigmac::launch
