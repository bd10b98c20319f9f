#pragma once

#include <string_view>

#include "core/error.h"

namespace bigmac::logs {

/// The formats a LogStream reads. kAuto picks one from the first record line, trying them in
/// this order (the exact ones before the general ones); `[cfg]` lines are read in every format.
enum class LogFormat {
  kAuto,
  kBigmac,      ///< bigmac-log v1 JSON lines (also accepts the key=value form)
  kKeyValue,    ///< `BIGMAC ev=... key=value` lines (also accepts the JSON form)
  kMegatron,    ///< Megatron-LM ` iteration N/ M | ... |` training lines
  kTorchtitan,  ///< torchtitan `step: N  loss: ...` lines
  kRegex,       ///< step lines matched by a custom FieldMap (`[logs.fields]`)
  kPythonDict,  ///< `{'loss': 2.31, 'learning_rate': 5e-05, ...}` (Hugging Face Trainer)
  kPlain,       ///< `step=3 loss=2.31`, `iter 3: loss 4.44, time 30ms`, `it 3 | loss 2.31`
};

/// `auto`, `bigmac`, `kv`, `megatron`, `torchtitan`, `regex`, `pydict`, `plain`.
std::string_view format_name(LogFormat format);

/// Parses a name printed by format_name (the `--format` option); a usage Error otherwise.
Expected<LogFormat> parse_format_name(std::string_view name);

}  // namespace bigmac::logs
