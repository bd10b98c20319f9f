#pragma once

#include <optional>

#include "config/config.h"
#include "core/error.h"
#include "logs/field_map.h"
#include "logs/log_format.h"

namespace bigmac::logs {

/// How a trainer's logs are read: the format and the compiled `[logs.fields]` map. Built from
/// the effective configuration by parser_options() and nowhere else, so that every path that
/// reads logs (live watch, gate evaluation, diagnosis, reports, baseline record, compare,
/// `diagnose -c`, `parse -c`) reads them alike and none detects a format on its own.
struct ParserOptions {
  ParserOptions() = default;
  /// A format alone (`--format` without a configuration, tests). Implicit on purpose: every
  /// function that took a LogFormat takes this now.
  ParserOptions(LogFormat f) : format(f) {}  // NOLINT(google-explicit-constructor)

  LogFormat format = LogFormat::kAuto;
  std::optional<FieldMap> fields;  ///< `[logs.fields]`, compiled; none when not configured

  /// The map a LogStream takes (null without one). Valid while these options live.
  const FieldMap* custom() const { return fields ? &*fields : nullptr; }
};

/// The parser options of `config`: `trainer.log_format` with `[logs.fields]` compiled. Under
/// `auto` a configured map is tried after the exact formats (bigmac, Megatron, torchtitan) and
/// before the general ones. A malformed regex, a regex without exactly one capture or an unknown
/// field is a config Error naming `logs.fields.<name>` and the file, line and column (or the
/// `--set`) that set it. (load_config has already refused `regex` without `[logs.fields]`.)
Expected<ParserOptions> parser_options(const config::Config& config);

}  // namespace bigmac::logs
