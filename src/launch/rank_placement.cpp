#include "launch/rank_placement.h"

#include <fmt/format.h>

#include <charconv>

namespace bigmac::launch {
namespace {

template <class T>
bool parse_number(std::string_view text, T& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && ptr == text.data() + text.size();
}

}  // namespace

std::string placement_line(const RankPlacement& p) {
  return fmt::format("{}rank={} local_rank={} node_rank={} node={} job_step={} parent={}",
                     kPlacementMarker, p.rank, p.local_rank, p.node_rank,
                     p.node.empty() ? "-" : p.node, p.job_step.empty() ? "-" : p.job_step,
                     p.parent);
}

std::optional<RankPlacement> parse_placement_line(std::string_view line) {
  if (!line.starts_with(kPlacementMarker)) return std::nullopt;
  line.remove_prefix(kPlacementMarker.size());
  RankPlacement p;
  bool have_rank = false;
  while (!line.empty()) {
    const std::size_t space = line.find(' ');
    const std::string_view field = line.substr(0, space);
    line = space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
    const std::size_t eq = field.find('=');
    if (eq == std::string_view::npos) return std::nullopt;
    const std::string_view key = field.substr(0, eq);
    const std::string_view value = field.substr(eq + 1);
    bool ok = true;
    if (key == "rank") {
      ok = have_rank = parse_number(value, p.rank);
    } else if (key == "local_rank") {
      ok = parse_number(value, p.local_rank);
    } else if (key == "node_rank") {
      ok = parse_number(value, p.node_rank);
    } else if (key == "node") {
      p.node = value == "-" ? std::string() : std::string(value);
    } else if (key == "job_step") {
      p.job_step = value == "-" ? std::string() : std::string(value);
    } else if (key == "parent") {
      ok = parse_number(value, p.parent);
    }
    if (!ok) return std::nullopt;
  }
  if (!have_rank || p.rank < 0) return std::nullopt;
  return p;
}

}  // namespace bigmac::launch
