#include "logs/python_dict_line.h"

#include <optional>
#include <vector>

#include "core/trim.h"
#include "logs/metric_alias.h"
#include "logs/number_text.h"

namespace bigmac::logs {

namespace {

// One `key: value` of the dict: the folded key and the value's text when it is a number (or a
// number in a call), else empty with `number` false.
struct DictEntry {
  std::string key;
  std::string_view value;
  bool number = false;
};

// Reads the dict at the start of `text` into entries; false when it is not one well-formed
// dict. `saw_loss` tells the caller whether a loss key was read before it went wrong.
class DictReader {
 public:
  explicit DictReader(std::string_view text) : text_(text) {}

  bool read(std::vector<DictEntry>& entries, bool& saw_loss) {
    if (!take('{')) return false;
    skip_blanks();
    if (take('}')) return trim(text_.substr(at_)).empty();
    while (true) {
      skip_blanks();
      std::string_view key;
      if (!quoted(key)) return false;
      DictEntry entry;
      entry.key = fold_metric_name(key);
      skip_blanks();
      if (!take(':')) return false;  // `{'loss'}` is a set, no dict
      saw_loss = saw_loss || metric_role(entry.key) == MetricRole::kLoss;
      skip_blanks();
      if (!value(entry)) return false;
      entries.push_back(std::move(entry));
      skip_blanks();
      if (take(',')) continue;
      if (!take('}')) return false;
      return trim(text_.substr(at_)).empty();
    }
  }

 private:
  bool take(char c) {
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }

  void skip_blanks() {
    while (at_ < text_.size() && is_blank(text_[at_])) ++at_;
  }

  // A Python string literal in ' or ", its text without the quotes (escapes left as written).
  bool quoted(std::string_view& out) {
    if (at_ >= text_.size() || (text_[at_] != '\'' && text_[at_] != '"')) return false;
    const char quote = text_[at_++];
    const std::size_t start = at_;
    while (at_ < text_.size() && text_[at_] != quote) at_ += text_[at_] == '\\' ? 2 : 1;
    if (at_ >= text_.size()) return false;
    out = text_.substr(start, at_ - start);
    ++at_;
    return true;
  }

  // Past a bracketed value (list, tuple, dict, call arguments), strings inside included.
  bool skip_bracketed() {
    int depth = 0;
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (c == '\'' || c == '"') {
        std::string_view ignored;
        if (!quoted(ignored)) return false;
        continue;
      }
      ++at_;
      if (c == '[' || c == '(' || c == '{') ++depth;
      if (c == ']' || c == ')' || c == '}') --depth;
      if (depth == 0) return true;
    }
    return false;
  }

  bool value(DictEntry& entry) {
    if (at_ >= text_.size()) return false;
    const char c = text_[at_];
    if (c == '\'' || c == '"') {
      // transformers 5 prints every float formatted for reading, as a string ('4.717', its
      // f"{v:.4g}"): a string that is a whole number reads as that number.
      std::string_view inside;
      if (!quoted(inside)) return false;
      inside = trim(inside);
      if (!inside.empty() && number_length(inside) == inside.size()) {
        entry.value = inside;
        entry.number = true;
      }
      return true;
    }
    if (c == '[' || c == '(' || c == '{') return skip_bracketed();
    // A bare word: a number, True/False/None, or a call `tensor(0.8, device='cuda:0')`.
    const std::size_t start = at_;
    while (at_ < text_.size() && text_[at_] != ',' && text_[at_] != '}' && text_[at_] != '(' &&
           !is_blank(text_[at_])) {
      ++at_;
    }
    std::string_view word = text_.substr(start, at_ - start);
    if (at_ < text_.size() && text_[at_] == '(') {
      // The call's first argument, when it is a number.
      std::size_t first = at_ + 1;
      while (first < text_.size() && is_blank(text_[first])) ++first;
      std::string_view inside = text_.substr(first);
      std::size_t length = number_length(inside);
      if (length > 0) {
        std::string_view after = trim(inside.substr(length)).substr(0, 1);
        if (after == "," || after == ")") {
          entry.value = inside.substr(0, length);
          entry.number = true;
        }
      }
      return skip_bracketed();
    }
    if (word.empty()) return false;
    entry.number = number_length(word) == word.size();
    if (entry.number) entry.value = word;
    return true;
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

// Where the dict starts: the first `{` followed by a quote.
std::size_t dict_start(std::string_view text) {
  for (std::size_t at = text.find('{'); at != std::string_view::npos; at = text.find('{', at + 1)) {
    if (at + 1 < text.size() && (text[at + 1] == '\'' || text[at + 1] == '"')) return at;
  }
  return std::string_view::npos;
}

}  // namespace

LineMatch read_python_dict_line(std::string_view text, StepLine& out, std::string& error) {
  text = trim(text);
  if (text.empty() || text.back() != '}') return LineMatch::kNotMine;
  const std::size_t start = dict_start(text);
  if (start == std::string_view::npos) return LineMatch::kNotMine;
  std::vector<DictEntry> entries;
  bool saw_loss = false;
  if (!DictReader(text.substr(start)).read(entries, saw_loss)) {
    if (!saw_loss) return LineMatch::kNotMine;
    error = "a Python dict with a loss that does not parse";
    return LineMatch::kBad;
  }
  bool has_loss = false;
  for (const DictEntry& entry : entries) {
    const MetricRole role = metric_role(entry.key);
    // The Trainer's closing summary carries `train_loss` too, but is no step.
    if (role == MetricRole::kEvaluation || entry.key == "train_runtime") return LineMatch::kNotMine;
    has_loss = has_loss || role == MetricRole::kLoss;
  }
  if (!has_loss) return LineMatch::kNotMine;

  out = StepLine{};
  StepRecord& r = out.record;
  for (const DictEntry& entry : entries) {
    const MetricRole role = metric_role(entry.key);
    std::optional<double> value = entry.number ? parse_real(entry.value) : std::nullopt;
    if (!value) {
      if (role == MetricRole::kOther) continue;
      error = "field " + entry.key + ": expected a number";
      return LineMatch::kBad;
    }
    if (role == MetricRole::kCounter && !out.counter) {
      std::optional<std::int64_t> counter = exact_integer(*value);
      if (!counter || *counter < 0) {
        error = "field " + entry.key + ": '" + std::string(entry.value.substr(0, 40)) +
                "' is not a step number";
        return LineMatch::kBad;
      }
      out.counter = *counter;
      continue;
    }
    if (!store_metric(role, entry.key, *value, entry.value, r, error)) return LineMatch::kBad;
  }
  return LineMatch::kRecord;
}

}  // namespace bigmac::logs
