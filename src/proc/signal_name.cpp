#include "proc/signal_name.h"

#include <fmt/format.h>

#include <csignal>
#include <cstring>

namespace bigmac::proc {
namespace {

struct NamedSignal {
  int number;
  const char* name;
};

// sigabbrev_np exists only from glibc 2.32; a table keeps the names stable everywhere.
constexpr NamedSignal kSignals[] = {
    {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
    {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
    {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
    {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}, {SIGCHLD, "SIGCHLD"},
    {SIGCONT, "SIGCONT"}, {SIGSTOP, "SIGSTOP"}, {SIGTSTP, "SIGTSTP"}, {SIGTTIN, "SIGTTIN"},
    {SIGTTOU, "SIGTTOU"}, {SIGURG, "SIGURG"},   {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
    {SIGSYS, "SIGSYS"},
};

}  // namespace

std::string signal_name(int signal) {
  for (const NamedSignal& s : kSignals) {
    if (s.number == signal) return s.name;
  }
  return fmt::format("signal {}", signal);
}

std::optional<int> signal_number(std::string_view name) {
  if (!name.empty() && name.front() >= '0' && name.front() <= '9') {
    int n = 0;
    for (char c : name) {
      if (c < '0' || c > '9') return std::nullopt;
      n = n * 10 + (c - '0');
    }
    return n;
  }
  for (const NamedSignal& s : kSignals) {
    std::string_view full = s.name;
    if (name == full || name == full.substr(3)) return s.number;
  }
  return std::nullopt;
}

}  // namespace bigmac::proc
