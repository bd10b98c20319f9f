#pragma once

#include <cstdint>
#include <optional>

namespace bigmac::logs {

/// Turns the step counters a log prints into the 0-based `global_step` of StepRecord, by one
/// rule for every format that prints its own counter (Megatron, torchtitan, Python dict and
/// plain step lines): the first counter of a stream decides. A stream whose first counter is 0
/// counts from 0 and is kept as printed; any other counts finished steps from 1 (Megatron's
/// `iteration 10`, torchtitan's `step: 10`, the Hugging Face `global_step`) and every counter
/// of the stream is lowered by one. So a 0-based trainer whose first printed step is not 0
/// (it logs every 10th step from step 10) is read as 1-based: print step 0 too, or map it with
/// `[logs.fields]`. One per stream.
class StepNumbering {
 public:
  /// `counter` >= 0 (readers take counters from digits only).
  std::int64_t global_step(std::int64_t counter) {
    if (!offset_) offset_ = counter == 0 ? 0 : 1;
    return counter > 0 ? counter - *offset_ : counter;
  }

 private:
  std::optional<std::int64_t> offset_;
};

}  // namespace bigmac::logs
