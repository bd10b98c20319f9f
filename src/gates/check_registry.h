#pragma once

#include <span>
#include <string_view>

#include "gates/check.h"

namespace bigmac::gates {

/// A named check: one function over a CheckContext.
using CheckFunction = CheckResult (*)(const CheckContext&);

struct RegisteredCheck {
  std::string_view name;
  CheckFunction run;
};

/// Every check by name, the vocabulary of gate files and reports. Adding a check is one
/// function and one line here (and one line in a stages/ file).
std::span<const RegisteredCheck> registered_checks();

/// nullptr when no check has that name.
CheckFunction find_check(std::string_view name);

}  // namespace bigmac::gates
