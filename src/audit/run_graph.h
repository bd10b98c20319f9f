#pragma once

#include <set>
#include <string>
#include <vector>

#include "audit/project_facts.h"

namespace bigmac::audit {

/// The files that act together in one run: a launch script (or another file nothing refers
/// to) and every file it reaches through references (the program it starts, the config file
/// it passes, the modules those import). Two config files that no one file reaches together
/// are alternatives (pp2.yaml and pp4.yaml), never compared with each other.
struct RunGroup {
  std::string root;
  std::set<std::string> files;
  std::set<std::string> launched;  ///< programs a launch script of this run starts
};

/// Resolves each reference to the files read (a path relative to the referring file, to one
/// of its parent directories, or as a unique trailing path; a module by its dotted path) and
/// groups the files into runs.
std::vector<RunGroup> build_runs(const ProjectFacts& facts);

}  // namespace bigmac::audit
