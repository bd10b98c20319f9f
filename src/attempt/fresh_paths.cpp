#include "attempt/fresh_paths.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <system_error>

#include "core/atomic_file.h"
#include "core/json_file.h"

namespace bigmac::attempt {
namespace fs = std::filesystem;
namespace {

bool exists_here(const fs::path& p) {
  std::error_code ec;
  return fs::symlink_status(p, ec).type() != fs::file_type::not_found && !ec;
}

// Whether `inner` is `outer` or lies inside it (both absolute and normal).
bool within(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // a trailing separator
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

Expected<void> move_path(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  if (!ec) fs::rename(from, to, ec);
  if (ec == std::errc::cross_device_link) {
    ec.clear();
    fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::copy_symlinks, ec);
    if (!ec) fs::remove_all(from, ec);
  }
  if (ec) {
    return tl::unexpected(make_error(
        ErrorKind::kInfrastructure,
        fmt::format("cannot move {} to {}: {}", from.string(), to.string(), ec.message()),
        "free the path (permissions, disk space) and run again; nothing was deleted"));
  }
  return {};
}

// A name in `dir` for entry `index`'s file that nothing holds yet.
fs::path free_name(const fs::path& dir, std::size_t index, const fs::path& path) {
  const std::string base = fmt::format("{}-{}", index, path.filename().string());
  fs::path out = dir / base;
  for (int n = 1; exists_here(out); ++n) out = dir / fmt::format("{}.{}", base, n);
  return out;
}

Expected<void> write_manifest(const SetAside& aside) {
  nlohmann::json entries = nlohmann::json::array();
  for (const SetAside::Entry& e : aside.entries) {
    entries.push_back({{"path", e.path.string()}, {"kept", e.kept.string()}});
  }
  const nlohmann::json doc = {
      {"what",
       "files trainer.fresh_paths set aside during a gate attempt; `kept` goes back to `path` "
       "when the run goes on (or move it back by hand)"},
      {"attempt_dir", aside.attempt_dir.string()},
      {"entries", entries}};
  return write_file_atomically(aside.manifest, json_text(doc, 2) + "\n");
}

fs::path relative_to_run(const SetAside& aside, const fs::path& p) {
  std::error_code ec;
  const fs::path rel = fs::relative(p, aside.manifest.parent_path(), ec);
  return ec || rel.empty() ? p : rel;
}

}  // namespace

Expected<SetAside> set_aside(const std::vector<std::string>& paths, const fs::path& base,
                             const fs::path& run_dir, const fs::path& attempt_dir) {
  SetAside aside;
  if (paths.empty()) return aside;
  const fs::path here = fs::absolute(base).lexically_normal();
  const fs::path run = fs::absolute(run_dir).lexically_normal();
  aside.manifest = run / kSetAsideManifest;
  aside.attempt_dir = fs::absolute(attempt_dir).lexically_normal();
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const fs::path given(paths[i]);
    const fs::path abs = (given.is_absolute() ? given : here / given).lexically_normal();
    std::string refused;
    if (paths[i].empty()) {
      refused = "is empty";
    } else if (within(here, abs)) {
      refused = fmt::format("is, or holds, the ranks' working directory {}", here.string());
    } else if (within(run, abs) || within(abs, run)) {
      refused = fmt::format("is, holds or lies in the run folder {}", run.string());
    }
    if (!refused.empty()) {
      Error e = make_error(
          ErrorKind::kConfig,
          fmt::format("trainer.fresh_paths entry {} \"{}\" {}", i + 1, paths[i], refused),
          "name the program's checkpoint files or their own folder");
      e.key = "trainer.fresh_paths";
      return tl::unexpected(e);
    }
    SetAside::Entry entry{abs, {}};
    if (exists_here(abs)) entry.kept = free_name(aside.attempt_dir / "set-aside", i, abs);
    aside.entries.push_back(entry);
  }
  // The manifest first: a run killed during the moves still knows where every file is.
  if (auto w = write_manifest(aside); !w) return tl::unexpected(w.error());
  for (const SetAside::Entry& e : aside.entries) {
    if (e.kept.empty()) continue;
    if (auto moved = move_path(e.path, e.kept); !moved) {
      (void)put_back(aside);  // what moved already goes back; the rest never left
      return tl::unexpected(moved.error());
    }
  }
  return aside;
}

Expected<std::vector<std::string>> put_back(const SetAside& aside) {
  std::vector<std::string> lines;
  if (aside.manifest.empty()) return lines;
  for (std::size_t i = 0; i < aside.entries.size(); ++i) {
    const SetAside::Entry& e = aside.entries[i];
    const bool moved_away = !e.kept.empty() && exists_here(e.kept);
    // A file that was there and never moved (or came back already) is the user's: left alone.
    if (!e.kept.empty() && !moved_away) continue;
    if (exists_here(e.path)) {
      const fs::path wrote = free_name(aside.attempt_dir / "wrote", i, e.path);
      if (auto m = move_path(e.path, wrote); !m) return tl::unexpected(m.error());
      lines.push_back(fmt::format("what the gate wrote at {} is kept as {}", e.path.string(),
                                  relative_to_run(aside, wrote).string()));
    }
    if (moved_away) {
      if (auto m = move_path(e.kept, e.path); !m) return tl::unexpected(m.error());
      lines.push_back(fmt::format("{} is back where it was", e.path.string()));
    }
  }
  std::error_code ec;
  fs::remove(aside.manifest, ec);
  return lines;
}

Expected<std::vector<std::string>> recover_set_aside(const fs::path& run_dir) {
  SetAside aside;
  aside.manifest = fs::absolute(run_dir).lexically_normal() / kSetAsideManifest;
  if (!exists_here(aside.manifest)) return std::vector<std::string>{};
  auto bad = [&](const std::string& why) {
    Error e = make_error(ErrorKind::kInput,
                         fmt::format("{} (files set aside by an attempt that never ended) {}",
                                     aside.manifest.string(), why),
                         "move each `kept` file back to its `path` by hand, then delete it");
    e.file = aside.manifest.string();
    return tl::unexpected(e);
  };
  auto read = read_json_file(aside.manifest);
  if (!read) return bad("cannot be read: " + read.error().message);
  const nlohmann::json& doc = *read;
  if (!doc.is_object() || !doc.contains("entries") || !doc["entries"].is_array() ||
      !doc.value("attempt_dir", nlohmann::json()).is_string()) {
    return bad("is not JSON with attempt_dir and entries");
  }
  aside.attempt_dir = doc["attempt_dir"].get<std::string>();
  for (const nlohmann::json& e : doc["entries"]) {
    if (!e.is_object() || !e.value("path", nlohmann::json()).is_string() ||
        !e.value("kept", nlohmann::json()).is_string()) {
      return bad("has an entry without path and kept");
    }
    aside.entries.push_back({e["path"].get<std::string>(), e["kept"].get<std::string>()});
  }
  auto lines = put_back(aside);
  if (lines) {
    for (std::string& l : *lines) l = "an attempt that never ended had set files aside: " + l;
  }
  return lines;
}

}  // namespace bigmac::attempt
