#include "core/error.h"

#include <fmt/format.h>

#include "core/printable.h"

namespace bigmac {

std::string Error::format() const {
  std::string out;
  // A file name or key comes from outside: no escape sequence or line break of theirs is printed.
  if (!file.empty()) {
    out += printable(file);
    if (line > 0) out += fmt::format(":{}", line);
    if (column > 0) out += fmt::format(":{}", column);
    out += ": ";
  }
  if (!key.empty()) out += printable(key) + ": ";
  out += message;
  if (!hint.empty()) out += " (" + hint + ")";
  return out;
}

ExitCode exit_code_for(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kUsage:
    case ErrorKind::kConfig:
    case ErrorKind::kInput:
      return ExitCode::kBadInput;
    case ErrorKind::kInfrastructure:
      return ExitCode::kInfrastructure;
    case ErrorKind::kInterrupted:
      return ExitCode::kInterrupted;
  }
  return ExitCode::kBadInput;
}

ExitCode exit_code_for(const Errors& errors) {
  ExitCode worst = ExitCode::kOk;
  for (const Error& e : errors) {
    ExitCode code = exit_code_for(e.kind);
    if (code == ExitCode::kInterrupted) return code;
    if (to_int(code) > to_int(worst)) worst = code;
  }
  return worst;
}

Error make_error(ErrorKind kind, std::string message, std::string hint) {
  Error e;
  e.kind = kind;
  e.message = std::move(message);
  e.hint = std::move(hint);
  return e;
}

}  // namespace bigmac
