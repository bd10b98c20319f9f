#pragma once

#include <string>
#include <vector>

#include <tl/expected.hpp>

#include "core/exit_code.h"

namespace bigmac {

/// What class of problem an Error is; decides the exit code at the top.
enum class ErrorKind {
  kUsage,           ///< command line misuse
  kConfig,          ///< configuration invalid (syntax, type, constraint, wrong layer)
  kInput,           ///< an input file is unreadable or malformed
  kInfrastructure,  ///< the environment prevents the work (binary missing, port, permission)
  kInterrupted,     ///< a signal asked us to stop
};

/// An error that input can cause. Lower layers return it in tl::expected; the CLI prints it once.
/// Where it has one it names the file, line, column and key; `hint` says what to do.
struct Error {
  ErrorKind kind = ErrorKind::kInput;
  std::string message;
  std::string file;
  int line = 0;
  int column = 0;
  std::string key;
  std::string hint;

  /// `file:line:col: key: message (hint)`, leaving out the parts that are empty.
  std::string format() const;
};

/// Several errors reported together (all constraint violations at once, not only the first).
using Errors = std::vector<Error>;

template <class T>
using Expected = tl::expected<T, Error>;

ExitCode exit_code_for(ErrorKind kind);

/// The most severe exit code among `errors` (infrastructure beats input).
ExitCode exit_code_for(const Errors& errors);

Error make_error(ErrorKind kind, std::string message, std::string hint = {});

}  // namespace bigmac
