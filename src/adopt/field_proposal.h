#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "logs/metric_alias.h"

namespace bigmac::adopt {

/// A number a line prints after a name: `loss 0.41`, `lr=2e-02`, `iter 3:`, `grad norm: 0.8`.
struct NamedNumber {
  std::string name;   ///< as printed, one or two words: "loss", "grad norm"
  std::string value;  ///< as printed: "0.41", "nan"
  std::string unit;   ///< letters right after the number ("ms", "s", "%"), or ""
  logs::MetricRole role = logs::MetricRole::kOther;
  std::size_t at = 0;  ///< where the name starts in the line
};

/// Every name-number pair of a line, left to right. The name is the word before the number
/// (with one more word before it when that is a word too: `lm loss`, `learning rate`), the two
/// joined by blanks, `=` or `:`; `[3/100]` and unnamed numbers are not pairs.
std::vector<NamedNumber> named_numbers(std::string_view line);

/// Whether a line prints a training loss: a loss name with a number and no evaluation name.
bool carries_loss(std::string_view line);

/// `[logs.fields]` regexes proposed for the lines that carry a loss, and the other numbers of
/// those lines as commented suggestions.
struct FieldProposal {
  std::map<std::string, std::string> fields;  ///< field -> regex with one capture
  /// Numbers the line prints that no field name is known for ("bsz" -> regex): the user decides.
  std::vector<std::pair<std::string, std::string>> unmapped;
  std::string example;  ///< the line the proposal was made from
};

/// A proposal made from the first of `loss_lines` (all non-empty, prefixes removed): each pair
/// whose name means a step field becomes `(?:^|[^A-Za-z0-9_])NAME\s*[:=]?\s*(NUMBER)`. The step
/// counter maps to `global_step` when the first line counts from 0, else to `step` (1-based).
/// The loss is anchored to the shape of the text before it in that line (its words as they are,
/// numbers and blanks of any width), so that other lines naming a loss (an evaluation's
/// `step 5: train loss 6.1, val loss 6.2`) are not taken for steps. Nothing when no line
/// carries a loss.
std::optional<FieldProposal> propose_fields(const std::vector<std::string>& loss_lines);

}  // namespace bigmac::adopt
