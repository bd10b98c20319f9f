#include "logs/field_map.h"

#include <re2/re2.h>

#include <array>
#include <string_view>

#include "core/checked_integer.h"
#include "core/edit_distance.h"
#include "logs/number_text.h"

namespace bigmac::logs {

namespace {

constexpr std::array<std::string_view, 9> kFieldNames{
    "global_step",      "step",    "loss",       "grad_norm",   "lr",
    "samples_per_step", "step_ms", "loss_scale", "tokens_per_s"};

Error field_error(const std::string& name, std::string message, std::string hint = {}) {
  Error error = make_error(ErrorKind::kConfig, std::move(message), std::move(hint));
  error.key = "logs.fields." + name;
  return error;
}

}  // namespace

Expected<FieldMap> FieldMap::compile(const std::map<std::string, std::string>& fields) {
  FieldMap map;
  for (const auto& [name, pattern] : fields) {
    bool known = false;
    for (std::string_view candidate : kFieldNames) known = known || candidate == name;
    if (!known) {
      std::optional<std::string> near = closest_match(name, kFieldNames);
      std::string hint = near ? "did you mean '" + *near + "'?"
                              : "known fields: global_step, step, loss, grad_norm, lr, "
                                "samples_per_step, step_ms, loss_scale, tokens_per_s";
      return tl::unexpected(field_error(name, "unknown step field '" + name + "'", hint));
    }
    RE2::Options options;
    options.set_log_errors(false);
    auto regex = std::make_shared<const RE2>(pattern, options);
    if (!regex->ok()) {
      return tl::unexpected(
          field_error(name, "malformed regex '" + pattern + "': " + regex->error()));
    }
    if (regex->NumberOfCapturingGroups() != 1) {
      return tl::unexpected(field_error(
          name,
          "regex '" + pattern + "' has " + std::to_string(regex->NumberOfCapturingGroups()) +
              " capture groups; expected exactly one",
          "capture the value with (...) and use (?:...) for other groups"));
    }
    map.fields_.push_back(Field{name, pattern, std::move(regex)});
  }
  if (map.fields_.empty()) {
    return tl::unexpected(field_error("*", "no fields given", "map at least `loss`"));
  }
  // The key field decides whether a line is a record; prefer the step counter, then the loss.
  map.key_field_ = 0;
  int best = 3;
  for (std::size_t i = 0; i < map.fields_.size(); ++i) {
    const std::string& name = map.fields_[i].name;
    int rank = (name == "global_step" || name == "step") ? 0 : name == "loss" ? 1 : 2;
    if (rank < best) {
      best = rank;
      map.key_field_ = i;
    }
  }
  return map;
}

LineMatch FieldMap::read(std::string_view text, std::int64_t next_step, StepRecord& out,
                         std::string& error) const {
  if (fields_.empty()) return LineMatch::kNotMine;
  const re2::StringPiece input(text.data(), text.size());
  re2::StringPiece capture;
  if (!RE2::PartialMatch(input, *fields_[key_field_].regex, &capture)) return LineMatch::kNotMine;
  out = StepRecord{};
  out.global_step = next_step;
  for (const Field& field : fields_) {
    if (!RE2::PartialMatch(input, *field.regex, &capture)) continue;
    std::string_view value_text(capture.data(), capture.size());
    std::optional<double> value = parse_real(value_text);
    if (!value) {
      error = "field " + field.name + ": captured '" + std::string(value_text.substr(0, 40)) +
              "', not a number";
      return LineMatch::kBad;
    }
    if (field.name == "global_step" || field.name == "step") {
      auto step = parse_integer(value_text);
      if (!step) {
        error = "field " + field.name + ": captured '" + std::string(value_text.substr(0, 40)) +
                "', not an integer";
        return LineMatch::kBad;
      }
      // `step` counts from 1; the lowest int64 has no step before it.
      const auto global = field.name == "step" ? checked_add(*step, -1) : step;
      if (!global) {
        error = "field step: " + std::to_string(*step) + " is out of range";
        return LineMatch::kBad;
      }
      out.global_step = *global;
    } else if (field.name == "loss") {
      out.loss = value;
    } else if (field.name == "grad_norm") {
      out.grad_norm = value;
    } else if (field.name == "lr") {
      out.lr = value;
    } else if (field.name == "samples_per_step") {
      out.samples_per_step = static_cast<std::int64_t>(*value);
    } else if (field.name == "step_ms") {
      out.step_ms = value;
    } else {
      out.extra.emplace_back(field.name, *value);
    }
  }
  return LineMatch::kRecord;
}

}  // namespace bigmac::logs
