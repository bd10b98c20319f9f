#pragma once

#include <string>
#include <string_view>

namespace bigmac::diagnose {

// What a line's own text says about who wrote it, for lines no launcher prefix attributed
// (logs::strip_line_prefix already took `[rank3]:`, `[default3]:` and srun's `3: `).

/// The rank a line names: OpenMPI's `[1,3]<stdout>:` tag, `[Rank 3]`, `[rank3]`, `Rank 3:`,
/// `rank : 3`; -1 when it names none. Only the first mention counts.
int rank_in_text(std::string_view text);

/// The host of an NCCL log line (`node2:22555:22555 [0] NCCL ...`); empty when not one.
std::string host_in_text(std::string_view text);

}  // namespace bigmac::diagnose
