#include "core/trim.h"
#include "logs/number_text.h"
#include "logs/step_line.h"

namespace bigmac::logs {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// ` iteration <N>/<M> |` anywhere; returns the offset just past the `|`, or npos.
std::size_t find_iteration(std::string_view text, std::int64_t& iteration, std::int64_t& total) {
  constexpr std::string_view kWord = "iteration ";
  for (std::size_t at = text.find(kWord); at != std::string_view::npos;
       at = text.find(kWord, at + 1)) {
    std::size_t i = at + kWord.size();
    while (i < text.size() && text[i] == ' ') ++i;
    std::size_t n_start = i;
    while (i < text.size() && is_digit(text[i])) ++i;
    if (i == n_start || i >= text.size() || text[i] != '/') continue;
    auto n = parse_integer(text.substr(n_start, i - n_start));
    ++i;
    while (i < text.size() && text[i] == ' ') ++i;
    std::size_t m_start = i;
    while (i < text.size() && is_digit(text[i])) ++i;
    auto m = parse_integer(text.substr(m_start, i - m_start));
    while (i < text.size() && text[i] == ' ') ++i;
    if (!n || !m || i >= text.size() || text[i] != '|') continue;
    iteration = *n;
    total = *m;
    return i + 1;
  }
  return std::string_view::npos;
}

}  // namespace

LineMatch read_megatron_line(std::string_view text, StepLine& line, std::string& error) {
  std::int64_t iteration = 0;
  std::int64_t total = 0;
  std::size_t pos = find_iteration(text, iteration, total);
  if (pos == std::string_view::npos) return LineMatch::kNotMine;
  line = StepLine{};
  line.counter = iteration;  // the count of finished iterations
  StepRecord& out = line.record;
  out.extra.emplace_back("train_iters", static_cast<double>(total));
  std::string_view rest = text.substr(pos);
  while (!rest.empty()) {
    std::size_t bar = rest.find('|');
    std::string_view segment = trim(rest.substr(0, bar));
    rest = bar == std::string_view::npos ? std::string_view{} : rest.substr(bar + 1);
    std::size_t colon = segment.rfind(':');
    if (colon == std::string_view::npos) continue;
    std::string_view name = trim(segment.substr(0, colon));
    std::string_view value_text = trim(segment.substr(colon + 1));
    std::optional<double> value = parse_real(value_text);
    bool known = name == "lm loss" || name == "loss" || name == "learning rate" ||
                 name == "grad norm" || name == "global batch size" ||
                 name == "elapsed time per iteration (ms)";
    if (!value) {
      if (known) {
        error = "Megatron field '" + std::string(name) + "': '" +
                std::string(value_text.substr(0, 40)) + "' is not a number";
        return LineMatch::kBad;
      }
      continue;
    }
    if (name == "lm loss" || name == "loss") {
      out.loss = *value;
    } else if (name == "learning rate") {
      out.lr = *value;
    } else if (name == "grad norm") {
      out.grad_norm = *value;
    } else if (name == "elapsed time per iteration (ms)") {
      out.step_ms = *value;
    } else if (name == "global batch size") {
      out.samples_per_step = exact_integer(*value);
      if (!out.samples_per_step) {
        error = "Megatron field 'global batch size': '" + std::string(value_text.substr(0, 40)) +
                "' is not a whole number";
        return LineMatch::kBad;
      }
    } else {
      out.extra.emplace_back(std::string(name), *value);
    }
  }
  return LineMatch::kRecord;
}

}  // namespace bigmac::logs
