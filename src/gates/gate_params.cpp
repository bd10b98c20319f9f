#include "gates/gate_params.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

#include "baseline/comparison.h"
#include "core/edit_distance.h"
#include "core/json_file.h"

namespace bigmac::gates {
namespace {

enum class Kind {
  kPolicy,      ///< "exact" | "relative" | "magnitude" | "band"
  kTolerance,   ///< finite number >= 0
  kFactor,      ///< finite number >= 1
  kGate,        ///< a gate id (checked against the catalog by load_gate_specs)
  kCount,       ///< integer >= 1
  kWindow,      ///< odd integer >= 3 (a centred moving average)
  kSeconds,     ///< finite number > 0
  kPositive,    ///< finite number > 0 (not a time)
  kEvents,      ///< list of contract event names
  kStepFields,  ///< list of step field names
  kCheckNames,  ///< list of check names (which of them are the gate's: gate_spec.cpp)
  kSwitch,      ///< true or false
};

struct Rule {
  std::string_view key;
  Kind kind;
};

// What the checks read (baseline_checks, step_checks, process_checks, comparison_policy).
constexpr std::array kRules = {
    Rule{"loss_policy", Kind::kPolicy},
    Rule{"loss_rel_tol", Kind::kTolerance},
    Rule{"loss_abs_tol", Kind::kTolerance},
    Rule{"loss_factor", Kind::kFactor},
    Rule{"loss_band_window", Kind::kWindow},  // baseline/band.h
    Rule{"loss_band_sigmas", Kind::kPositive},
    Rule{"loss_band_confirm", Kind::kCount},
    Rule{"loss_route_back_first_step", Kind::kGate},
    Rule{"loss_route_back_later", Kind::kGate},
    Rule{"grad_norm_policy", Kind::kPolicy},
    Rule{"grad_norm_rel_tol", Kind::kTolerance},
    Rule{"grad_norm_abs_tol", Kind::kTolerance},
    Rule{"grad_norm_factor", Kind::kFactor},
    Rule{"grad_norm_band_window", Kind::kWindow},  // baseline/band.h
    Rule{"grad_norm_band_sigmas", Kind::kPositive},
    Rule{"grad_norm_band_confirm", Kind::kCount},
    Rule{"grad_norm_route_back_first_step", Kind::kGate},
    Rule{"grad_norm_route_back_later", Kind::kGate},
    Rule{"lr_policy", Kind::kPolicy},
    Rule{"lr_rel_tol", Kind::kTolerance},
    Rule{"lr_abs_tol", Kind::kTolerance},
    Rule{"lr_factor", Kind::kFactor},
    Rule{"lr_band_window", Kind::kWindow},  // baseline/band.h
    Rule{"lr_band_sigmas", Kind::kPositive},
    Rule{"lr_band_confirm", Kind::kCount},
    Rule{"lr_route_back_first_step", Kind::kGate},
    Rule{"lr_route_back_later", Kind::kGate},
    Rule{"grad_norm_growth_factor", Kind::kFactor},
    Rule{"grad_norm_growth_steps", Kind::kCount},
    Rule{"idle_limit_s", Kind::kSeconds},
    Rule{"required_events", Kind::kEvents},
    Rule{"required_step_fields", Kind::kStepFields},
    Rule{"required_checks", Kind::kCheckNames},
    Rule{"stop_on_divergence", Kind::kSwitch},  // gates/early_stop.h
};

// The events and step fields check_fields_present can find (step_checks.cpp).
constexpr std::string_view kEvents[] = {"run",       "pg_ready", "batch", "model",  "layout",
                                        "heartbeat", "mb",       "shape", "digest", "done",
                                        "ckpt",      "loss",     "step"};
constexpr std::string_view kStepFields[] = {"loss", "grad_norm", "lr", "samples_per_step",
                                            "step_ms"};

std::string names(std::span<const std::string_view> list) {
  std::string out;
  for (std::string_view n : list) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

std::optional<ParamProblem> check_value(const Rule& rule, const nlohmann::json& v) {
  const std::string key(rule.key);
  auto problem = [&](std::string message, std::string hint = {}) {
    return ParamProblem{key, std::move(message), std::move(hint)};
  };
  auto number = [&](double min, bool above, const char* what) -> std::optional<ParamProblem> {
    if (!v.is_number())
      return problem(fmt::format("expected {}, found {}", what, json_type_name(v)));
    const double x = v.get<double>();
    if (!std::isfinite(x)) return problem(fmt::format("expected a finite number, found {}", x));
    if (x < min || (above && x == min)) {
      return problem(fmt::format("must be {} {}, found {}", above ? "more than" : "at least", min,
                                 json_text(v)));
    }
    return std::nullopt;
  };
  auto list = [&](std::span<const std::string_view> allowed) -> std::optional<ParamProblem> {
    if (!v.is_array())
      return problem(fmt::format("expected an array of names, found {}", json_type_name(v)));
    for (const auto& item : v) {
      const std::string name = item.is_string() ? item.get<std::string>() : json_text(item);
      if (!item.is_string() || std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        auto near = closest_match(name, allowed);
        return problem(
            fmt::format("unknown name {} in the list", json_text(item)),
            near ? fmt::format("did you mean '{}'?", *near) : "known: " + names(allowed));
      }
    }
    return std::nullopt;
  };
  switch (rule.kind) {
    case Kind::kPolicy:
      if (!v.is_string() ||
          (v.get<std::string>() != "auto" && !baseline::parse_policy(v.get<std::string>()))) {
        return problem(fmt::format("unknown comparison policy {}", json_text(v)),
                       "use \"auto\", \"exact\", \"relative\", \"magnitude\" or \"band\" "
                       "(docs/comparison-policies.md)");
      }
      return std::nullopt;
    case Kind::kTolerance:
      return number(0, false, "a number");
    case Kind::kFactor:
      return number(1, false, "a number");
    case Kind::kSeconds:
      return number(0, true, "a number of seconds");
    case Kind::kPositive:
      return number(0, true, "a number");
    case Kind::kWindow: {
      const auto n = json_integer(v);
      if (!n || *n < 3 || *n % 2 == 0 || *n > 1001) {
        return problem(fmt::format("expected an odd whole number of steps from 3 to 1001, found {}",
                                   json_text(v)),
                       "the moving average is centred on each step: 3, 5, 7 …");
      }
      return std::nullopt;
    }
    case Kind::kCount: {
      const auto n = json_integer(v);
      if (!n || *n < 1 || *n > (1 << 20)) {
        return problem(fmt::format("expected a whole number of steps from 1 to {}, found {}",
                                   1 << 20, json_text(v)));
      }
      return std::nullopt;
    }
    case Kind::kGate:
      if (!v.is_string()) {
        return problem(fmt::format("expected a gate id, found {}", json_type_name(v)));
      }
      return std::nullopt;
    case Kind::kEvents:
      return list(kEvents);
    case Kind::kStepFields:
      return list(kStepFields);
    case Kind::kSwitch:
      if (!v.is_boolean()) {
        return problem(fmt::format("expected true or false, found {}", json_text(v)));
      }
      return std::nullopt;
    case Kind::kCheckNames:
      if (!v.is_array()) {
        return problem(
            fmt::format("expected an array of check names, found {}", json_type_name(v)));
      }
      for (const auto& item : v) {
        if (!item.is_string()) {
          return problem(fmt::format("expected check names, found {}", json_text(item)));
        }
      }
      return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::vector<ParamProblem> check_gate_params(const nlohmann::json& params) {
  std::vector<ParamProblem> out;
  for (const auto& item : params.items()) {
    // Named, not a structured binding: clang before 16 cannot capture one in a lambda.
    const std::string& key = item.key();
    const nlohmann::json& value = item.value();
    auto rule =
        std::find_if(kRules.begin(), kRules.end(), [&](const Rule& r) { return r.key == key; });
    if (rule == kRules.end()) {
      std::vector<std::string_view> keys;
      for (const Rule& r : kRules) keys.push_back(r.key);
      auto near = closest_match(key, keys);
      out.push_back({key, fmt::format("unknown parameter '{}': no check reads it", key),
                     near ? fmt::format("did you mean '{}'?", *near) : std::string()});
      continue;
    }
    if (auto problem = check_value(*rule, value)) out.push_back(std::move(*problem));
  }
  return out;
}

bool is_route_back_param(const std::string& key) {
  return key.ends_with("_route_back_first_step") || key.ends_with("_route_back_later");
}

}  // namespace bigmac::gates
