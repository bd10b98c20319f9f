#include "baseline/step_series.h"

#include <fmt/format.h>

namespace bigmac::baseline {

std::int64_t logging_interval(std::int64_t first, std::int64_t second, std::int64_t third) {
  // Differences of logged steps can pass int64 (a log may say anything): no interval then.
  const auto stride = checked_subtract(second, first);
  if (!stride || *stride <= 1 || first >= *stride || checked_subtract(third, second) != stride) {
    return 1;
  }
  return *stride;
}

std::string samples_per_step_fix(std::int64_t want, std::int64_t micro, std::int64_t accum,
                                 std::int64_t dp) {
  if (micro > 0 && dp > 0 && want % (micro * dp) == 0) {
    return fmt::format(
        "set train.gradient_accumulation_steps = {} for dp {} to keep {} samples/step "
        "(micro_batch_size {} × {} × {})",
        want / (micro * dp), dp, want, micro, want / (micro * dp), dp);
  }
  if (accum > 0 && dp > 0 && want % (accum * dp) == 0) {
    return fmt::format(
        "set train.micro_batch_size = {} for dp {} to keep {} samples/step "
        "({} × gradient_accumulation_steps {} × {})",
        want / (accum * dp), dp, want, want / (accum * dp), accum, dp);
  }
  if (dp > 0) {
    return fmt::format(
        "{} samples/step cannot be split evenly over dp {}: choose a process count that divides "
        "{} (or record a new baseline on purpose)",
        want, dp, want);
  }
  return fmt::format(
      "make train.micro_batch_size × train.gradient_accumulation_steps × dp equal {}", want);
}

}  // namespace bigmac::baseline
