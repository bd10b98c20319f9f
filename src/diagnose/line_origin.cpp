#include "diagnose/line_origin.h"

#include <re2/re2.h>

#include <charconv>

namespace bigmac::diagnose {
namespace {

const RE2& rank_pattern() {
  // `\b` keeps `local_rank: 0` and `nranks 16` out. Named so the alternatives stay readable.
  static const RE2 re(R"(^\[\d+,(?P<mpi>\d+)\]<std(?:out|err)>:)"
                      R"(|\[(?:rank|Rank|RANK) ?(?P<bracket>\d+)\])"
                      R"(|\b(?:rank|Rank|RANK)(?: ?: ?| )?(?P<word>\d+)\b)");
  return re;
}

const RE2& host_pattern() {
  static const RE2 re(R"(^([A-Za-z0-9][A-Za-z0-9._-]*):\d+:\d+ \[\d+\] )");
  return re;
}

}  // namespace

int rank_in_text(std::string_view text) {
  const RE2& re = rank_pattern();
  re2::StringPiece groups[4];
  if (!re.Match(text, 0, text.size(), RE2::UNANCHORED, groups, 4)) return -1;
  for (int g = 1; g < 4; ++g) {
    const re2::StringPiece& digits = groups[g];
    if (digits.data() == nullptr) continue;
    int rank = -1;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), rank);
    if (ec == std::errc() && end == digits.data() + digits.size()) return rank;
  }
  return -1;
}

std::string host_in_text(std::string_view text) {
  std::string host;
  if (!RE2::PartialMatch(text, host_pattern(), &host)) return {};
  return host;
}

}  // namespace bigmac::diagnose
