#include "cli/run_options.h"

namespace bigmac::cli {

tl::expected<attempt::RunContext, Errors> make_run_context(const RunCommandOptions& options) {
  auto config = load_config(options.common);
  if (!config) return tl::unexpected(config.error());
  auto context = attempt::RunContext::create(
      std::move(*config),
      {options.common.config_file, options.baseline, options.stages, options.no_baseline});
  if (context && options.strict) {
    for (gates::GateSpec& spec : context->catalog.specs) spec.strict = true;
  }
  return context;
}

}  // namespace bigmac::cli
