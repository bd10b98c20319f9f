#include "launch/error_line.h"

#include <algorithm>
#include <cctype>

#include "core/trim.h"
#include "core/utf8.h"

namespace bigmac::launch {
namespace {

constexpr std::size_t kMaxKept = 500;

// `RuntimeError: ...`, `ValueError: ...`, `torch.distributed.DistBackendError: ...`.
bool is_exception_line(std::string_view s) {
  std::size_t colon = s.find(": ");
  if (colon == std::string_view::npos) return false;
  std::string_view name = s.substr(0, colon);
  if (name.find(' ') != std::string_view::npos) return false;
  return name.ends_with("Error") || name.ends_with("Exception");
}

bool mentions_failure(std::string_view s) {
  std::string lower(s.substr(0, kMaxKept));
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (std::string_view word : {"error", "fatal", "abort", "terminate called", "segmentation fault",
                                "exception", "killed"}) {
    if (lower.find(word) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

void ErrorLine::add(std::string_view raw) {
  std::string_view line = trim(raw);
  if (line.empty()) return;
  std::string kept(utf8_prefix(line, kMaxKept));
  // A traceback ends with its exception; a chained one repeats — the first exception is the cause.
  if (exception_.empty() && is_exception_line(line)) exception_ = kept;
  if (mention_.empty() && mentions_failure(line)) mention_ = kept;
  last_.push_back(std::move(kept));
  if (last_.size() > kKeptLines) last_.pop_front();
}

std::string ErrorLine::best() const {
  if (!exception_.empty()) return exception_;
  if (!mention_.empty()) return mention_;
  return last_.empty() ? std::string() : last_.back();
}

}  // namespace bigmac::launch
