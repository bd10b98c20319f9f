#include "core/checked_integer.h"
#include "core/trim.h"
#include "logs/number_text.h"
#include "logs/step_line.h"

namespace bigmac::logs {

namespace {

// torchtitan prints tps and tflops with thousands separators ("1,234").
std::optional<double> parse_grouped(std::string_view text) {
  std::string plain;
  for (char c : text) {
    if (c != ',') plain.push_back(c);
  }
  return parse_real(plain);
}

}  // namespace

LineMatch read_torchtitan_line(std::string_view text, StepLine& line, std::string& error) {
  constexpr std::string_view kStep = "step:";
  std::size_t at = text.find(kStep);
  if (at == std::string_view::npos || (at > 0 && text[at - 1] != ' ')) return LineMatch::kNotMine;
  // Validation lines use the same layout; they are not training steps.
  if (text.substr(0, at).find("valid") != std::string_view::npos) return LineMatch::kNotMine;
  std::string_view rest = text.substr(at + kStep.size());
  if (rest.find("loss:") == std::string_view::npos) return LineMatch::kNotMine;
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);  // `step:  1`
  std::size_t gap = rest.find("  ");
  std::string_view step_text = trim(rest.substr(0, gap));
  auto step = parse_integer(step_text);
  if (!step || *step < 0) return LineMatch::kNotMine;
  line = StepLine{};
  line.counter = *step;  // torchtitan counts steps from 1
  StepRecord& out = line.record;
  rest = gap == std::string_view::npos ? std::string_view{} : rest.substr(gap);
  while (!rest.empty()) {
    rest = trim(rest);
    std::size_t colon = rest.find(':');
    if (colon == std::string_view::npos) break;
    std::string_view name = trim(rest.substr(0, colon));
    rest.remove_prefix(colon + 1);
    while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
    std::size_t end = rest.find("  ");
    std::string_view value_text = trim(rest.substr(0, end));
    rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end);
    if (name == "memory") {
      // `12.34GiB(15.60%)`
      std::size_t unit = value_text.find("GiB");
      if (auto gib = parse_real(value_text.substr(0, unit)))
        out.extra.emplace_back("memory_gib", *gib);
      continue;
    }
    if (!value_text.empty() && value_text.back() == '%') value_text.remove_suffix(1);
    std::optional<double> value = parse_grouped(value_text);
    if (!value) {
      if (name == "loss" || name == "grad_norm" || name == "lr") {
        error = "torchtitan field '" + std::string(name) + "': '" +
                std::string(value_text.substr(0, 40)) + "' is not a number";
        return LineMatch::kBad;
      }
      continue;  // `mfu: N/A`
    }
    if (name == "loss") {
      out.loss = *value;
    } else if (name == "grad_norm") {
      out.grad_norm = *value;
    } else if (name == "lr") {
      out.lr = *value;
    } else {
      out.extra.emplace_back(std::string(name), *value);
    }
  }
  return LineMatch::kRecord;
}

}  // namespace bigmac::logs
