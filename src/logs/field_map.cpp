#include "logs/field_map.h"

#include <array>
#include <string_view>

#include <re2/re2.h>

#include "core/edit_distance.h"

namespace bigmac::logs {

namespace {

constexpr std::array<std::string_view, 9> kFieldNames{
    "global_step", "step", "loss", "grad_norm", "lr", "samples_per_step", "step_ms",
    "loss_scale", "tokens_per_s"};

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

}  // namespace bigmac::logs
