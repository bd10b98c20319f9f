#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "logs/record.h"

namespace bigmac::logs {

/// Whether a line belongs to a step-line format.
enum class LineMatch {
  kNotMine,  ///< not this format's step line (context, or another format)
  kRecord,   ///< `out` holds the step
  kBad,      ///< this format's step line, but a value would not read; `error` says which
};

/// A step line as a format's reader read it: the record, and the step counter the line printed
/// (none: the format prints no counter). The stream turns the counter into the record's
/// 0-based global_step (StepNumbering), or counts steps where there is none.
struct StepLine {
  StepRecord record;
  std::optional<std::int64_t> counter;
};

/// Megatron-LM's training_log line (prefix and colour codes already removed):
/// ` [2024-05-01 12:00:00] iteration       10/     100 | consumed samples: 320 | elapsed time
/// per iteration (ms): 1234.5 | learning rate: 1.500000E-04 | global batch size: 32 | lm loss:
/// 7.123456E+00 | loss scale: 1.0 | grad norm: 2.345 | number of skipped iterations: 0 |
/// number of nan iterations: 0 |`. The counter is the iteration; `lm loss` is the loss, `global
/// batch size` the samples per step, `elapsed time per iteration (ms)` the step time; every
/// other number goes to `extra`.
LineMatch read_megatron_line(std::string_view text, StepLine& out, std::string& error);

/// torchtitan's metrics line: `step: 10  loss:  7.1234  grad_norm:  1.2345  memory: 12.34GiB
/// (15.60%)  tps: 1,234  tflops: 56.78  mfu: 12.34%`. The counter is the step; `memory` (GiB),
/// `tps`, `tflops`, `mfu` (percent) go to `extra`; `mfu: N/A` is left out.
LineMatch read_torchtitan_line(std::string_view text, StepLine& out, std::string& error);

}  // namespace bigmac::logs
