#include "logs/log_format.h"

#include <array>
#include <string>

namespace bigmac::logs {

namespace {
constexpr std::array<std::pair<std::string_view, LogFormat>, 8> kNames{{
    {"auto", LogFormat::kAuto},
    {"bigmac", LogFormat::kBigmac},
    {"kv", LogFormat::kKeyValue},
    {"megatron", LogFormat::kMegatron},
    {"torchtitan", LogFormat::kTorchtitan},
    {"regex", LogFormat::kRegex},
    {"pydict", LogFormat::kPythonDict},
    {"plain", LogFormat::kPlain},
}};
}  // namespace

std::string_view format_name(LogFormat format) {
  for (const auto& [name, value] : kNames) {
    if (value == format) return name;
  }
  return "auto";
}

Expected<LogFormat> parse_format_name(std::string_view name) {
  for (const auto& [known, value] : kNames) {
    if (known == name) return value;
  }
  Error error =
      make_error(ErrorKind::kUsage, "unknown log format '" + std::string(name) + "'",
                 "use one of auto, bigmac, kv, megatron, torchtitan, regex, pydict, plain");
  error.key = "--format";
  return tl::unexpected(std::move(error));
}

}  // namespace bigmac::logs
