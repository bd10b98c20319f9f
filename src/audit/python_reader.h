#pragma once

#include <string>

#include "audit/project_facts.h"
#include "core/error.h"

namespace bigmac::audit {

/// Turns the Python helper's JSON (audit_python.py) into places and model and entry facts.
/// A file the helper could not parse is an error naming it, with the line and Python's reason.
Errors read_python_facts(const std::string& helper_json, ProjectFacts& facts);

}  // namespace bigmac::audit
