#include "audit/audit_hint.h"

namespace bigmac::audit {

std::string settings_applied_hint(const std::string& project) {
  return "a setting you gave did not take effect in the trainer; `bigmac-bringup audit " +
         (project.empty() ? std::string("PATH") : project) +
         "` lists where each parallel setting of your project is written, read and overridden "
         "(a value written at the caller instead of the consumer, or overwritten by a default "
         "loaded later)";
}

}  // namespace bigmac::audit
