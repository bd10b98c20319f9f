#include "logs/metric_line.h"

#include <optional>
#include <vector>

#include "logs/metric_alias.h"
#include "logs/number_text.h"

namespace bigmac::logs {

namespace {

// Bytes between tokens. Those that also end a name (a name does not run across them) are
// `strong`: `foo, loss 2` names the loss `loss`, not `foo loss`.
bool is_separator(char c) {
  return c == ' ' || c == '\t' || c == '=' || c == ':' || c == ',' || c == '|' || c == ';' ||
         c == '[' || c == ']' || c == '(' || c == ')';
}
bool is_strong_separator(char c) {
  return c == ',' || c == '|' || c == ';' || c == '[' || c == ']' || c == '(' || c == ')';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

bool all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!is_digit(c)) return false;
  }
  return true;
}

// What may follow a number in its token: a unit of letters (`ms`, `GiB`), a rate (`it/s`),
// a percent sign, or a total (`/100`).
bool is_unit(std::string_view unit) {
  if (unit.empty() || unit == "%") return true;
  if (unit.front() == '/') return all_digits(unit.substr(1));
  if (unit.size() > 2 && unit.ends_with("/s")) unit.remove_suffix(2);
  if (unit.size() > 8) return false;
  for (char c : unit) {
    if (!is_letter(c)) return false;
  }
  return true;
}

// A token that starts like a number: a digit, a sign or point before one, or a non-finite word.
bool looks_numeric(std::string_view token) {
  std::size_t i = token.front() == '-' || token.front() == '+' ? 1 : 0;
  if (i < token.size() && token[i] == '.') ++i;
  return (i < token.size() && is_digit(token[i])) || number_length(token) == token.size();
}

// One `name value` pair of the line: the words of the name and the value's token.
struct NamedValue {
  std::string name;  // folded
  std::string_view value;
};

std::vector<NamedValue> split_pairs(std::string_view text) {
  std::vector<NamedValue> pairs;
  std::string name;
  std::size_t i = 0;
  while (i < text.size()) {
    if (is_separator(text[i])) {
      if (is_strong_separator(text[i])) name.clear();
      ++i;
      continue;
    }
    std::size_t start = i;
    while (i < text.size() && !is_separator(text[i])) ++i;
    std::string_view token = text.substr(start, i - start);
    if (looks_numeric(token)) {
      if (!name.empty()) pairs.push_back(NamedValue{std::move(name), token});
      name.clear();  // a value without a name (`12:00:07`) is left out
    } else {
      if (!name.empty()) name.push_back('_');
      name += fold_metric_name(token);
    }
  }
  return pairs;
}

std::string_view last_word(std::string_view folded) {
  std::size_t underscore = folded.rfind('_');
  return underscore == std::string_view::npos ? folded : folded.substr(underscore + 1);
}

// The counter name of a pair, if it is one: the whole name (`global_step`) or its last word
// (`training starts at step` -> `step`).
std::optional<std::string> counter_name_of(const std::string& name) {
  if (metric_role(name) == MetricRole::kCounter) return name;
  std::string_view last = last_word(name);
  if (metric_role(last) == MetricRole::kCounter) return std::string(last);
  return std::nullopt;
}

struct UnitValue {
  double value = 0;
  std::string_view unit;
};

std::optional<UnitValue> read_number(std::string_view token) {
  std::size_t length = number_length(token);
  if (length == 0 || !is_unit(token.substr(length))) return std::nullopt;
  std::optional<double> value = parse_real(token.substr(0, length));
  if (!value) return std::nullopt;
  return UnitValue{*value, token.substr(length)};
}

}  // namespace

LineMatch read_metric_line(std::string_view text, std::string& counter_name, StepLine& out,
                           std::string& error) {
  std::vector<NamedValue> pairs = split_pairs(text);
  // The counter: the stream's counter name once it has one, else the first counter.
  const NamedValue* counter = nullptr;
  std::string counter_found;
  bool has_loss = false;
  for (const NamedValue& pair : pairs) {
    MetricRole role = metric_role(pair.name);
    if (role == MetricRole::kEvaluation) return LineMatch::kNotMine;
    has_loss = has_loss || role == MetricRole::kLoss;
    if (counter != nullptr) continue;
    std::optional<std::string> name = counter_name_of(pair.name);
    if (name && (counter_name.empty() || *name == counter_name)) {
      counter = &pair;
      counter_found = std::move(*name);
    }
  }
  if (counter == nullptr || !has_loss) return LineMatch::kNotMine;

  out = StepLine{};
  const std::string_view count = counter->value.substr(0, counter->value.find('/'));
  const std::string_view total = counter->value.substr(count.size());
  std::optional<std::int64_t> step = all_digits(count) ? parse_integer(count) : std::nullopt;
  if (!step || (!total.empty() && !all_digits(total.substr(1)))) {
    error = "step counter " + counter_found + ": '" + std::string(counter->value.substr(0, 40)) +
            "' is not a whole number";
    return LineMatch::kBad;
  }
  out.counter = *step;
  if (!total.empty()) {
    if (auto steps = parse_integer(total.substr(1))) {
      out.record.extra.emplace_back("total_steps", static_cast<double>(*steps));
    }
  }
  for (const NamedValue& pair : pairs) {
    if (&pair == counter) continue;
    MetricRole role = metric_role(pair.name);
    std::optional<UnitValue> number = read_number(pair.value);
    if (!number) {
      if (role == MetricRole::kOther || role == MetricRole::kCounter) continue;
      error = "field " + pair.name + ": '" + std::string(pair.value.substr(0, 40)) +
              "' is not a number";
      return LineMatch::kBad;
    }
    // A time with a unit is the step time, in milliseconds.
    const bool timed = number->unit == "ms" || number->unit == "s";
    if (role == MetricRole::kOther && is_time_name(pair.name) && timed) role = MetricRole::kStepMs;
    const double value =
        role == MetricRole::kStepMs && number->unit == "s" ? number->value * 1000 : number->value;
    if (!store_metric(role, pair.name, value, pair.value, out.record, error))
      return LineMatch::kBad;
  }
  if (counter_name.empty()) counter_name = std::move(counter_found);
  return LineMatch::kRecord;
}

}  // namespace bigmac::logs
