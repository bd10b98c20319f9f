#include "audit/run_graph.h"

#include <algorithm>
#include <filesystem>
#include <map>

namespace bigmac::audit {
namespace fs = std::filesystem;
namespace {

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  for (const auto& part : fs::path(path).lexically_normal()) {
    const std::string s = part.string();
    if (!s.empty() && s != "." && s != "/") out.push_back(s);
  }
  return out;
}

bool ends_with(const std::vector<std::string>& path, const std::vector<std::string>& tail) {
  if (tail.empty() || tail.size() > path.size()) return false;
  return std::equal(tail.rbegin(), tail.rend(), path.rbegin());
}

std::size_t common_prefix(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

/// The files a reference may mean, best first.
std::vector<std::string> resolve(const FileReference& ref, const std::vector<std::string>& files) {
  std::vector<std::vector<std::string>> tails;
  if (ref.module) {
    std::string path = ref.text;
    std::replace(path.begin(), path.end(), '.', '/');
    if (path.empty()) return {};
    tails.push_back(components(path + ".py"));
    tails.push_back(components(path + "/__init__.py"));
  } else {
    tails.push_back(components(ref.text));
    while (!tails[0].empty() && tails[0][0] == "..") tails[0].erase(tails[0].begin());
  }
  const auto from = components(ref.from);
  const std::vector<std::string> from_dir(from.begin(), from.end() - (from.empty() ? 0 : 1));
  std::vector<std::pair<std::size_t, std::string>> scored;
  for (const std::string& file : files) {
    if (file == ref.from) continue;
    const auto parts = components(file);
    for (const auto& tail : tails) {
      if (!ends_with(parts, tail)) continue;
      const std::vector<std::string> dir(parts.begin(),
                                         parts.end() - static_cast<long>(tail.size()));
      // A file under the referrer's own directory (or a parent of it) beats one elsewhere.
      const std::size_t shared = common_prefix(dir, from_dir);
      const bool ancestor = shared == dir.size();
      scored.emplace_back((ancestor ? 1000 : 0) + shared, file);
    }
  }
  if (scored.empty()) return {};
  std::sort(scored.begin(), scored.end(), std::greater<>());
  std::vector<std::string> out;
  for (const auto& [score, file] : scored) {
    if (score == scored.front().first) out.push_back(file);
  }
  return out;
}

}  // namespace

std::vector<RunGroup> build_runs(const ProjectFacts& facts) {
  std::map<std::string, std::set<std::string>> edges;
  std::map<std::string, std::set<std::string>> launches;
  std::set<std::string> referenced;
  for (const FileReference& ref : facts.references) {
    for (const std::string& target : resolve(ref, facts.files)) {
      edges[ref.from].insert(target);
      referenced.insert(target);
      if (ref.launches) launches[ref.from].insert(target);
    }
  }
  std::vector<RunGroup> runs;
  std::set<std::string> reached;
  auto walk = [&](const std::string& root) {
    RunGroup run{root, {}, {}};
    std::vector<std::string> stack{root};
    while (!stack.empty()) {
      const std::string file = stack.back();
      stack.pop_back();
      if (!run.files.insert(file).second) continue;
      for (const std::string& next : edges[file]) stack.push_back(next);
      for (const std::string& program : launches[file]) run.launched.insert(program);
    }
    reached.insert(run.files.begin(), run.files.end());
    runs.push_back(std::move(run));
  };
  for (const std::string& file : facts.files) {
    if (!referenced.count(file)) walk(file);
  }
  // Files only reachable from a cycle (a imports b imports a) form runs of their own.
  for (const std::string& file : facts.files) {
    if (!reached.count(file)) walk(file);
  }
  return runs;
}

}  // namespace bigmac::audit
