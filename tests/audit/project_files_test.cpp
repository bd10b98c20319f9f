#include "audit/project_files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace bigmac::audit {
namespace {

namespace fs = std::filesystem;

TEST(ProjectFiles, ReadsWhatConfiguresARunAndSkipsBuildTreesAndHiddenFolders) {
  const fs::path dir =
      fs::temp_directory_path() / ("bigmac-audit-files-" + std::to_string(::getpid()));
  for (const char* sub : {"configs", "build-fuzz", ".git", "__pycache__", "scripts"}) {
    fs::create_directories(dir / sub);
  }
  std::ofstream(dir / "configs" / "pp4.yaml") << "pp_size: 4\n";
  std::ofstream(dir / "build-fuzz" / "copy.yaml") << "pp_size: 4\n";
  std::ofstream(dir / ".git" / "config.toml") << "a = 1\n";
  std::ofstream(dir / "__pycache__" / "x.py") << "x = 1\n";
  std::ofstream(dir / "scripts" / "launch") << "#!/usr/bin/env bash\ntorchrun train.py\n";
  std::ofstream(dir / "scripts" / "notes") << "not a script\n";
  std::ofstream(dir / "train.py") << "x = 1\n";
  std::ofstream(dir / "README.md") << "# x\n";
  auto files = find_project_files({dir.string()});
  ASSERT_TRUE(files);
  std::vector<std::string> found;
  for (const ProjectFile& f : *files)
    found.push_back(fs::path(f.path).lexically_relative(dir).string());
  EXPECT_EQ(found, (std::vector<std::string>{"configs/pp4.yaml", "scripts/launch", "train.py"}));
  EXPECT_EQ((*files)[1].kind, FileKind::kShell);

  auto missing = find_project_files({(dir / "nope").string()});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error()[0].file, (dir / "nope").string());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace bigmac::audit
