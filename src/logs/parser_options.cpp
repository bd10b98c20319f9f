#include "logs/parser_options.h"

namespace bigmac::logs {

Expected<ParserOptions> parser_options(const config::Config& config) {
  auto format = parse_format_name(config.trainer.log_format);
  if (!format) {
    Error error = format.error();
    error.kind = ErrorKind::kConfig;
    error.key = "trainer.log_format";
    if (const config::Setting* s = config.settings.find("trainer.log_format")) {
      config::locate(error, s->origin);
    }
    return tl::unexpected(std::move(error));
  }
  ParserOptions options(*format);
  if (config.log_fields.empty()) return options;  // `regex` needs fields: load_config checks
  auto fields = FieldMap::compile(config.log_fields);
  if (!fields) {
    Error error = fields.error();
    // FieldMap names the key `logs.fields.<name>`; the configuration knows where it was set.
    const std::string prefix = "logs.fields.";
    if (error.key.starts_with(prefix)) {
      auto origin = config.log_field_origins.find(error.key.substr(prefix.size()));
      if (origin != config.log_field_origins.end()) config::locate(error, origin->second);
    }
    return tl::unexpected(std::move(error));
  }
  options.fields = std::move(*fields);
  return options;
}

}  // namespace bigmac::logs
