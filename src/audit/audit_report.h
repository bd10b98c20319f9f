#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "audit/project_audit.h"

namespace bigmac::audit {

/// The audit as text: one table (setting, its layer, every place it is written with the value
/// and that place's layer, every place it is read), then the findings with file:line and the
/// fix, then what could not be checked.
std::string audit_text(const ProjectAudit& audit);

/// The same as one JSON document (`audit --json`).
nlohmann::json audit_json(const ProjectAudit& audit);

}  // namespace bigmac::audit
