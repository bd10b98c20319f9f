#include "audit/place.h"

namespace bigmac::audit {

std::string_view source_name(Source source) {
  switch (source) {
    case Source::kDefault:
      return "default in code";
    case Source::kConfigFile:
      return "config file";
    case Source::kDirective:
      return "#SBATCH directive";
    case Source::kEnvironment:
      return "environment";
    case Source::kScript:
      return "launch script";
    case Source::kCode:
      return "set in code";
  }
  return "?";
}

}  // namespace bigmac::audit
