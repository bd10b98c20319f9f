#include "launch/slurm_hostlist.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>

namespace bigmac::launch {
namespace {

Error list_error(std::string_view what, std::string_view text) {
  return make_error(ErrorKind::kInput, fmt::format("malformed {} '{}'", what, text));
}

std::optional<int> to_int(std::string_view s) {
  int value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || value < 0) return {};
  return value;
}

// Splits at commas outside brackets.
std::vector<std::string_view> top_level_items(std::string_view text) {
  std::vector<std::string_view> items;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || (text[i] == ',' && depth == 0)) {
      if (i > start) items.push_back(text.substr(start, i - start));
      start = i + 1;
    } else if (text[i] == '[') {
      ++depth;
    } else if (text[i] == ']') {
      --depth;
    }
  }
  return items;
}

// "07-08" -> {"07", "08"}; "3" -> {"3"}. Keeps the width of the lower bound.
Expected<std::vector<std::string>> expand_range(std::string_view range, std::string_view item) {
  const std::size_t dash = range.find('-');
  if (dash == std::string_view::npos) {
    if (!to_int(range)) return tl::unexpected(list_error("hostlist", item));
    return std::vector<std::string>{std::string(range)};
  }
  const std::string_view lo_text = range.substr(0, dash);
  auto lo = to_int(lo_text);
  auto hi = to_int(range.substr(dash + 1));
  if (!lo || !hi || *hi < *lo || *hi - *lo > 100000) {
    return tl::unexpected(list_error("hostlist", item));
  }
  std::vector<std::string> out;
  for (int v = *lo; v <= *hi; ++v) out.push_back(fmt::format("{:0{}}", v, lo_text.size()));
  return out;
}

// One item with any number of bracket groups: "a[1-2]b[3,5]".
Expected<std::vector<std::string>> expand_item(std::string_view item) {
  std::vector<std::string> hosts = {""};
  std::size_t i = 0;
  while (i < item.size()) {
    const std::size_t open = item.find('[', i);
    const std::string_view literal =
        item.substr(i, open == std::string_view::npos ? item.npos : open - i);
    for (std::string& h : hosts) h += literal;
    if (open == std::string_view::npos) break;
    const std::size_t close = item.find(']', open);
    if (close == std::string_view::npos) return tl::unexpected(list_error("hostlist", item));
    std::vector<std::string> suffixes;
    for (std::string_view range : top_level_items(item.substr(open + 1, close - open - 1))) {
      auto part = expand_range(range, item);
      if (!part) return tl::unexpected(part.error());
      suffixes.insert(suffixes.end(), part->begin(), part->end());
    }
    if (suffixes.empty()) return tl::unexpected(list_error("hostlist", item));
    std::vector<std::string> next;
    for (const std::string& h : hosts) {
      for (const std::string& s : suffixes) next.push_back(h + s);
    }
    hosts = std::move(next);
    i = close + 1;
  }
  return hosts;
}

}  // namespace

std::string first_host(std::string_view hostlist) {
  const auto items = top_level_items(hostlist);
  if (items.empty()) return {};
  std::string host;
  std::string_view item = items.front();
  // The first value of every bracket group: "a[1-2]b[3,5]" -> a1b3.
  std::size_t i = 0;
  while (i < item.size()) {
    const std::size_t open = item.find('[', i);
    host += item.substr(i, open == std::string_view::npos ? item.npos : open - i);
    if (open == std::string_view::npos) break;
    std::size_t end = open + 1;
    while (end < item.size() && item[end] != '-' && item[end] != ',' && item[end] != ']') ++end;
    host += item.substr(open + 1, end - open - 1);
    const std::size_t close = item.find(']', open);
    if (close == std::string_view::npos) break;
    i = close + 1;
  }
  return host;
}

Expected<std::vector<std::string>> expand_hostlist(std::string_view hostlist) {
  std::vector<std::string> hosts;
  for (std::string_view item : top_level_items(hostlist)) {
    auto part = expand_item(item);
    if (!part) return tl::unexpected(part.error());
    hosts.insert(hosts.end(), part->begin(), part->end());
  }
  return hosts;
}

Expected<std::vector<int>> expand_node_counts(std::string_view text) {
  std::vector<int> counts;
  for (std::string_view item : top_level_items(text)) {
    int repeat = 1;
    std::string_view count = item;
    if (const std::size_t paren = item.find("(x"); paren != std::string_view::npos) {
      if (item.back() != ')') return tl::unexpected(list_error("per-node count list", text));
      auto r = to_int(item.substr(paren + 2, item.size() - paren - 3));
      if (!r || *r > 100000) return tl::unexpected(list_error("per-node count list", text));
      repeat = *r;
      count = item.substr(0, paren);
    }
    auto value = to_int(count);
    if (!value) return tl::unexpected(list_error("per-node count list", text));
    counts.insert(counts.end(), static_cast<std::size_t>(repeat), *value);
  }
  return counts;
}

Expected<std::vector<int>> expand_task_list(std::string_view text) {
  std::vector<int> tasks;
  for (std::string_view item : top_level_items(text)) {
    auto range = expand_range(item, text);
    if (!range) return tl::unexpected(list_error("task list", text));
    for (const std::string& t : *range) tasks.push_back(*to_int(t));
  }
  return tasks;
}

}  // namespace bigmac::launch
