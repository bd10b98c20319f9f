#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace bigmac::gates {

/// One thing wrong with a gate's `[params]`: the key, what is wrong, what to do.
struct ParamProblem {
  std::string key;
  std::string message;
  std::string hint;
};

/// Checks a gate's `[params]` against what the checks read: every key must be one of them
/// (did-you-mean otherwise), of its type and in its range: tolerances finite and >= 0, factors
/// >= 1, step counts whole and >= 1, time limits > 0, policies and event or field names from
/// their lists. A parameter a check cannot use is never silently replaced by its default.
std::vector<ParamProblem> check_gate_params(const nlohmann::json& params);

/// Whether `key` names a gate to return to (`loss_route_back_first_step`), whose value must be a
/// gate id of the catalog.
bool is_route_back_param(const std::string& key);

}  // namespace bigmac::gates
