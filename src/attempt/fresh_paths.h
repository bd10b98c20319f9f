#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"

namespace bigmac::attempt {

/// The files a program resumes from when they exist, at paths no flag moves (`trainer.
/// fresh_paths`, which `adopt` drafts when its second trial loaded what the first one wrote).
/// Each gate starts without them and the user's directory ends as it was:
///
///   set_aside   before the ranks start, what is at each path moves into the attempt folder
///               (`set-aside/`), after `set-aside.json` in the run folder names every move;
///   put_back    once the ranks are gone, what the gate wrote there moves into the attempt
///               folder (`wrote/`) and what was set aside goes back;
///   recover     a run that died between the two (SIGKILL, power) left `set-aside.json`: the
///               next attempt of the run puts everything back first.
///
/// Moves are renames (a copy then a removal across file systems); nothing is ever deleted, and
/// putting back twice (a crash while putting back) moves nothing twice.
struct SetAside {
  struct Entry {
    std::filesystem::path path;  ///< absolute
    std::filesystem::path kept;  ///< where the file that was there went; empty: nothing there
  };
  std::filesystem::path manifest;     ///< run_dir/set-aside.json; empty: nothing was set aside
  std::filesystem::path attempt_dir;  ///< where `set-aside/` and `wrote/` are
  std::vector<Entry> entries;
};

/// The run folder's record of an interrupted set-aside.
inline constexpr const char* kSetAsideManifest = "set-aside.json";

/// Moves what is at each of `paths` (relative ones are relative to `base`, the ranks' working
/// directory) into `attempt_dir/set-aside/`. A path that is, or holds, `base` or `run_dir` is
/// refused (kConfig, key trainer.fresh_paths), as is a move that fails (kInfrastructure; what
/// was moved already goes back first).
Expected<SetAside> set_aside(const std::vector<std::string>& paths,
                             const std::filesystem::path& base,
                             const std::filesystem::path& run_dir,
                             const std::filesystem::path& attempt_dir);

/// Puts back what `aside` moved, keeping what the gate wrote in `attempt_dir/wrote/`; removes
/// the manifest once every file is back. Returns one line per path that moved, for the
/// progress output (empty when nothing was there before or after).
Expected<std::vector<std::string>> put_back(const SetAside& aside);

/// Puts back what an attempt of `run_dir` that never ended set aside (its manifest); nothing
/// to do without one. The lines say what moved.
Expected<std::vector<std::string>> recover_set_aside(const std::filesystem::path& run_dir);

}  // namespace bigmac::attempt
