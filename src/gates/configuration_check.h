#pragma once

#include <filesystem>
#include <string>

#include "config/config.h"
#include "core/error.h"
#include "gates/gate_catalog.h"

namespace bigmac::gates {

/// The gate files' folder: `given` (--stages), else ./stages when there is one, else the one
/// installed with the program, else the source tree's (default_stages_directories).
std::filesystem::path stages_directory(const std::string& given);

/// The one validation every command runs on a loaded configuration before it does anything,
/// so that `config check` refuses exactly what `plan`, `run-all`, `run` and `resume` refuse:
/// the gate files with the `[gates.<id>]` overrides applied (keys, types, ranges), every gate's
/// plan from the configuration alone (process counts, layout, samples/step), the launcher's
/// limits for each gate, the `[logs.fields]` regexes and the `{placeholders}` of an external
/// trainer's command. Every error at once; the gates when there is none.
tl::expected<GateCatalog, Errors> check_configuration(const config::Config& config,
                                                      const std::filesystem::path& stages_dir);

}  // namespace bigmac::gates
