#include "gates/check.h"

#include "gates/observability.h"

namespace bigmac::gates {

double CheckParams::number(const std::string& key, double fallback) const {
  auto it = params_.find(key);
  return it != params_.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string CheckParams::text(const std::string& key, const std::string& fallback) const {
  auto it = params_.find(key);
  return it != params_.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::vector<std::string> CheckParams::strings(const std::string& key,
                                              const std::vector<std::string>& fallback) const {
  auto it = params_.find(key);
  if (it == params_.end() || !it->is_array()) return fallback;
  std::vector<std::string> out;
  for (const auto& v : *it) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

CheckResult pass(std::string name, std::string message, std::vector<CheckEvidence> evidence) {
  return CheckResult{std::move(name), true, std::move(message), std::move(evidence), {}, {}, {}};
}

CheckResult unobservable(std::string name, std::string message,
                         const std::vector<std::string>& fields) {
  CheckResult r = fail(std::move(name), std::move(message));
  for (const std::string& field : fields) r.unobservable.push_back(missing_field(field));
  return r;
}

CheckResult certain(CheckResult failed, std::int64_t step) {
  failed.certain_at = step;
  return failed;
}

CheckResult fail(std::string name, std::string message, std::vector<CheckEvidence> evidence) {
  return CheckResult{std::move(name), false, std::move(message), std::move(evidence), {}, {}, {}};
}

}  // namespace bigmac::gates
