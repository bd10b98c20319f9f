#include "audit/project_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

namespace bigmac::audit {
namespace fs = std::filesystem;
namespace {

constexpr std::uintmax_t kLargestJson = 1 << 20;

bool skipped_directory(const fs::path& dir) {
  static const std::set<std::string> names = {"__pycache__",   "node_modules", "venv",
                                              "site-packages", "build",        "reports"};
  const std::string name = dir.filename().string();
  // Build trees (build, build-fuzz, cmake-build-debug) hold copies and generated files.
  const bool build_tree =
      name.starts_with("build-") || name.starts_with("build_") || name.starts_with("cmake-build");
  return (name.size() > 1 && name[0] == '.' && name != "..") || names.count(name) != 0 ||
         build_tree;
}

std::optional<FileKind> kind_of(const fs::path& path, bool named_explicitly) {
  const std::string ext = path.extension().string();
  if (ext == ".sh" || ext == ".bash" || ext == ".sbatch" || ext == ".slurm")
    return FileKind::kShell;
  if (ext == ".yaml" || ext == ".yml") return FileKind::kYaml;
  if (ext == ".toml") return FileKind::kToml;
  if (ext == ".py") return FileKind::kPython;
  if (ext == ".json") {
    std::error_code ec;
    if (!named_explicitly && fs::file_size(path, ec) > kLargestJson) return std::nullopt;
    return FileKind::kJson;
  }
  if (!ext.empty() && !named_explicitly) return std::nullopt;
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  if (!first.starts_with("#!")) return std::nullopt;
  if (first.find("python") != std::string::npos) return FileKind::kPython;
  if (first.find("sh") != std::string::npos) return FileKind::kShell;
  return std::nullopt;
}

std::string shown(const fs::path& path) {
  const fs::path rel = path.lexically_normal();
  std::string text = rel.generic_string();
  return text.starts_with("./") ? text.substr(2) : text;
}

}  // namespace

tl::expected<std::vector<ProjectFile>, Errors> find_project_files(
    const std::vector<std::string>& paths) {
  std::vector<ProjectFile> out;
  Errors errors;
  auto unreadable = [&](const fs::path& p, const std::string& why) {
    Error e = make_error(ErrorKind::kInput, "cannot read: " + why,
                         "give a file or directory that exists and that you may read");
    e.file = p.string();
    errors.push_back(std::move(e));
  };
  for (const std::string& given : paths) {
    const fs::path root(given);
    std::error_code ec;
    const auto status = fs::status(root, ec);
    if (ec || !fs::exists(status)) {
      unreadable(root, ec ? ec.message() : "no such file or directory");
      continue;
    }
    if (!fs::is_directory(status)) {
      auto kind = kind_of(root, true);
      if (!kind) {
        unreadable(root, "not a shell script, YAML, TOML, JSON or Python file");
        continue;
      }
      out.push_back(ProjectFile{shown(root), *kind});
      continue;
    }
    std::vector<ProjectFile> found;
    fs::recursive_directory_iterator it(root, fs::directory_options::none, ec);
    if (ec) {
      unreadable(root, ec.message());
      continue;
    }
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) {
        unreadable(it->path(), ec.message());
        break;
      }
      if (it->is_directory(ec)) {
        if (skipped_directory(it->path())) it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file(ec)) continue;
      if (auto kind = kind_of(it->path(), false))
        found.push_back(ProjectFile{shown(it->path()), *kind});
    }
    std::sort(found.begin(), found.end(),
              [](const ProjectFile& a, const ProjectFile& b) { return a.path < b.path; });
    out.insert(out.end(), found.begin(), found.end());
  }
  if (!errors.empty()) return tl::unexpected(errors);
  // The same file named twice (a directory and a file in it) is read once.
  std::vector<ProjectFile> unique;
  std::set<std::string> seen;
  for (ProjectFile& f : out) {
    if (seen.insert(f.path).second) unique.push_back(std::move(f));
  }
  return unique;
}

}  // namespace bigmac::audit
