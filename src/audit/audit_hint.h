#pragma once

#include <string>

namespace bigmac::audit {

/// What `run-all` prints when the `settings_applied` check fails: a value given to the
/// trainer did not take effect, and `audit` shows where each setting is written, read and
/// overridden in the user's project. `project` is the trainer's directory when known.
std::string settings_applied_hint(const std::string& project = {});

}  // namespace bigmac::audit
