#include "adopt/field_proposal.h"

#include <cctype>

#include "logs/number_text.h"

namespace bigmac::adopt {
namespace {

bool word_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
         c == '/';
}

bool alpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }

// The length of the number starting at `i` (digits with an optional fraction and exponent, or
// nan/inf), 0 when none starts there.
std::size_t number_length(std::string_view s, std::size_t i) {
  std::size_t j = i;
  if (j < s.size() && (s[j] == '-' || s[j] == '+')) ++j;
  for (std::string_view word : {"nan", "inf"}) {
    if (s.size() - j >= 3) {
      bool same = true;
      for (std::size_t k = 0; k < 3; ++k)
        same = same && std::tolower(static_cast<unsigned char>(s[j + k])) == word[k];
      if (same && (j + 3 == s.size() || !alpha(s[j + 3]))) return j + 3 - i;
    }
  }
  const std::size_t digits_from = j;
  while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
  if (j < s.size() && s[j] == '.') {
    ++j;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
  }
  if (j == digits_from || (j == digits_from + 1 && s[digits_from] == '.')) return 0;
  if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
    std::size_t k = j + 1;
    if (k < s.size() && (s[k] == '-' || s[k] == '+')) ++k;
    const std::size_t exp_from = k;
    while (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) ++k;
    if (k > exp_from) j = k;
  }
  return j - i;
}

// The word that ends right before `end` (exclusive), or "".
std::string_view word_before(std::string_view s, std::size_t end) {
  std::size_t b = end;
  while (b > 0 && word_char(s[b - 1])) --b;
  return s.substr(b, end - b);
}

// The role the whole name has, without looking at its last word alone.
logs::MetricRole whole_name_role(const std::string& name) {
  const std::string folded = logs::fold_metric_name(name);
  // Short names trainers print that the log readers leave alone.
  if (folded == "gn" || folded == "gnorm" || folded == "grad") return logs::MetricRole::kGradNorm;
  return logs::metric_role(folded);
}

logs::MetricRole role_of(const std::string& name) {
  const std::string folded = logs::fold_metric_name(name);
  logs::MetricRole role = whole_name_role(name);
  if (role == logs::MetricRole::kOther && folded.find('_') != std::string::npos) {
    role = logs::metric_role(folded.substr(folded.rfind('_') + 1));
  }
  return role;
}

// The name of the number at `at`: the word before the separator (blanks, then at most one
// `:` or `=`, then blanks), with the word before it when only a blank separates them.
std::optional<std::string> name_before(std::string_view s, std::size_t at) {
  std::size_t end = at;
  while (end > 0 && s[end - 1] == ' ') --end;
  if (end > 0 && (s[end - 1] == ':' || s[end - 1] == '=')) --end;
  while (end > 0 && s[end - 1] == ' ') --end;
  const std::string_view last = word_before(s, end);
  if (last.empty() || !alpha(last.front())) return std::nullopt;
  std::string name(last);
  const std::size_t last_from = end - last.size();
  if (last_from >= 2 && s[last_from - 1] == ' ') {
    const std::string_view first = word_before(s, last_from - 1);
    // `lm loss`, `grad norm`, `val loss` (an evaluation): names of two words.
    if (!first.empty() && alpha(first.front()) &&
        whole_name_role(std::string(first) + " " + name) != logs::MetricRole::kOther) {
      name = std::string(first) + " " + name;
    }
  }
  return name;
}

std::string escape_regex(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == ' ') {
      out += "\\s+";
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      out.push_back(c);
    } else {
      out.push_back('\\');
      out.push_back(c);
    }
  }
  return out;
}

constexpr std::string_view kNumberCapture =
    "([-+]?(?:[0-9]+\\.?[0-9]*|\\.[0-9]+)(?:[eE][-+]?[0-9]+)?|(?i:[-+]?(?:nan|inf)))";

std::string regex_for(const NamedNumber& n, bool counter) {
  std::string out = "(?:^|[^A-Za-z0-9_])" + escape_regex(n.name) + "\\s*[:=]?\\s*";
  out += counter ? std::string("([0-9]+)") : std::string(kNumberCapture);
  if (!n.unit.empty() && n.role == logs::MetricRole::kStepMs) out += escape_regex(n.unit);
  return out;
}

// The text before the loss as a pattern: its words and punctuation as they are, any number
// where it has one and any blanks where it has blanks (timestamps, counters and padding vary
// from line to line).
std::string shape_of(std::string_view prefix) {
  std::string out;
  for (std::size_t i = 0; i < prefix.size();) {
    const char c = prefix[i];
    if (c >= '0' && c <= '9') {
      while (i < prefix.size() && ((prefix[i] >= '0' && prefix[i] <= '9') || prefix[i] == '.')) ++i;
      out += "[-+0-9.eE]+";
    } else if (c == ' ' || c == '\t') {
      while (i < prefix.size() && (prefix[i] == ' ' || prefix[i] == '\t')) ++i;
      out += "\\s*";
    } else {
      out += escape_regex(std::string(1, c));
      ++i;
    }
  }
  return out;
}

// The [logs.fields] name of a pair's role, or "" when it maps to none.
std::string field_of(const NamedNumber& n, bool zero_based) {
  switch (n.role) {
    case logs::MetricRole::kCounter:
      return zero_based ? "global_step" : "step";
    case logs::MetricRole::kLoss:
      return "loss";
    case logs::MetricRole::kGradNorm:
      return "grad_norm";
    case logs::MetricRole::kLr:
      return "lr";
    case logs::MetricRole::kSamplesPerStep:
      return "samples_per_step";
    case logs::MetricRole::kStepMs:
      return "step_ms";
    case logs::MetricRole::kOther:
    case logs::MetricRole::kEvaluation:
      return "";
  }
  return "";
}

}  // namespace

std::vector<NamedNumber> named_numbers(std::string_view line) {
  std::vector<NamedNumber> out;
  for (std::size_t i = 0; i < line.size();) {
    const bool starts = i == 0 || !word_char(line[i - 1]);
    const std::size_t len = starts ? number_length(line, i) : 0;
    if (len == 0) {
      ++i;
      continue;
    }
    std::size_t unit_end = i + len;
    while (unit_end < line.size() && (alpha(line[unit_end]) || line[unit_end] == '%')) ++unit_end;
    if (auto name = name_before(line, i)) {
      const std::size_t name_at = line.rfind(*name, i);
      NamedNumber n{*name, std::string(line.substr(i, len)),
                    std::string(line.substr(i + len, unit_end - i - len)), role_of(*name),
                    name_at == std::string_view::npos ? 0 : name_at};
      if (n.role == logs::MetricRole::kOther &&
          logs::is_time_name(logs::fold_metric_name(n.name)) && n.unit == "ms") {
        n.role = logs::MetricRole::kStepMs;
      }
      // A step time in seconds would need scaling, which a regex cannot do.
      if (n.role == logs::MetricRole::kStepMs && n.unit != "ms" && !n.unit.empty())
        n.role = logs::MetricRole::kOther;
      out.push_back(std::move(n));
    }
    i = unit_end;
  }
  return out;
}

bool carries_loss(std::string_view line) {
  bool loss = false;
  for (const NamedNumber& n : named_numbers(line)) {
    if (n.role == logs::MetricRole::kEvaluation) return false;
    loss = loss || n.role == logs::MetricRole::kLoss;
  }
  return loss;
}

std::optional<FieldProposal> propose_fields(const std::vector<std::string>& loss_lines) {
  for (const std::string& line : loss_lines) {
    if (!carries_loss(line)) continue;
    FieldProposal proposal;
    proposal.example = line;
    const std::vector<NamedNumber> pairs = named_numbers(line);
    for (const NamedNumber& n : pairs) {
      const bool counter = n.role == logs::MetricRole::kCounter;
      const bool zero_based = counter && logs::parse_integer(n.value) == 0;
      const std::string field = field_of(n, zero_based);
      if (counter && n.value.find_first_not_of("0123456789") != std::string::npos) continue;
      if (field.empty()) {
        proposal.unmapped.emplace_back(n.name, regex_for(n, false));
      } else if (!proposal.fields.count(field)) {
        std::string regex = regex_for(n, counter);
        if (field == "loss") {
          regex = "^\\s*" + shape_of(std::string_view(line).substr(0, n.at)) +
                  escape_regex(n.name) + "\\s*[:=]?\\s*" + std::string(kNumberCapture);
        }
        proposal.fields.emplace(field, std::move(regex));
      }
    }
    return proposal;
  }
  return std::nullopt;
}

}  // namespace bigmac::adopt
