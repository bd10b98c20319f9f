#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace bigmac::proc {

/// "SIGSEGV" for 11; "signal 77" for numbers without a name.
std::string signal_name(int signal);

/// The number of "SIGTERM", "TERM" or "15"; nullopt when unknown.
std::optional<int> signal_number(std::string_view name);

}  // namespace bigmac::proc
