#include "config/config.h"

#include <unistd.h>

#include "config/layering.h"
#include "config/schema.h"

extern char** environ;

namespace bigmac::config {

std::map<std::string, std::string> read_env() {
  std::map<std::string, std::string> out;
  for (char** var = environ; var && *var; ++var) {
    std::string_view entry(*var);
    if (entry.rfind("BIGMAC_", 0) != 0) continue;
    const std::size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    std::string name(entry.substr(0, eq));
    for (const SchemaEntry& e : schema()) {
      if (e.env_name() == name) {
        out[name] = std::string(entry.substr(eq + 1));
        break;
      }
    }
  }
  return out;
}

tl::expected<Config, Errors> load_config(const ConfigSources& sources) {
  Layering layering;
  if (sources.file) layering.read_file(*sources.file);
  layering.read_env(sources.env);
  for (const std::string& assignment : sources.overrides) layering.read_override(assignment);
  return std::move(layering).finish();
}

}  // namespace bigmac::config
