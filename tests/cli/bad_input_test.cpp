// The bad-input suite: every case of tests/cli/bad_input/*.tsv runs the real bigmac-bringup
// in a scratch directory of its own and must end with the documented exit code and a message
// that says what is wrong — never a crash, a hang (the case's deadline kills it) or a silent
// success. A row can plant files, links, FIFOs and permissions first, and check afterwards that
// a file it planted was not written through or replaced. The table format is described in
// tests/cli/bad_input/README.md.
//
// BIGMAC_BAD_INPUT_CASES=FILE|DIR runs another table (rows of a fix in progress, say);
// BIGMAC_BAD_INPUT_BINARY=PATH runs the table against another build of the program.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "testing/bounded_program.h"

namespace {

namespace fs = std::filesystem;
using bigmac::testing::BoundedRun;
using bigmac::testing::run_bounded;

/// One thing placed in the scratch directory before the command, or checked after it.
struct Step {
  std::string kind;
  std::string path;
  std::string value;
};

struct Case {
  std::string name;
  std::string where;  ///< "03-config-values.tsv:123"
  int exit_code = 2;
  std::string fragment;
  std::vector<std::string> args;
  std::vector<Step> setup;
  std::vector<Step> checks;
  std::map<std::string, std::string> env;
  bool unprivileged = false;
  int timeout_s = 60;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.where; }

// The case files: every *.tsv of the folder in name order, or the one file given.
std::vector<fs::path> table_files(std::vector<std::string>& errors) {
  const char* given = std::getenv("BIGMAC_BAD_INPUT_CASES");
  const fs::path where = given != nullptr && *given != '\0'
                             ? fs::path(given)
                             : fs::path(BIGMAC_SOURCE_DIR) / "tests/cli/bad_input";
  std::error_code ec;
  if (!fs::is_directory(where, ec)) return {where};
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(where, ec)) {
    if (entry.path().extension() == ".tsv") files.push_back(entry.path());
  }
  if (ec) errors.push_back("cannot list " + where.string() + ": " + ec.message());
  if (files.empty()) errors.push_back("no *.tsv case file in " + where.string());
  std::sort(files.begin(), files.end());
  return files;
}

std::string binary_path() {
  const char* given = std::getenv("BIGMAC_BAD_INPUT_BINARY");
  return given != nullptr && *given != '\0' ? given
                                            : std::string(BIGMAC_BIN_DIR) + "/bigmac-bringup";
}

std::string unescape(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\' || i + 1 == text.size()) {
      out += text[i];
      continue;
    }
    const char c = text[++i];
    if (c == 'n') {
      out += '\n';
    } else if (c == 't') {
      out += '\t';
    } else if (c == 'x' && i + 2 < text.size()) {
      out += static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

// Fields between TABs; an empty last field (an empty file's contents) is kept.
std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  for (std::size_t tab = line.find('\t'); tab != std::string::npos; tab = line.find('\t', start)) {
    fields.push_back(line.substr(start, tab - start));
    start = tab + 1;
  }
  fields.push_back(line.substr(start));
  return fields;
}

struct Table {
  std::vector<Case> cases;
  std::vector<std::string> errors;
};

// One case file into the table; its mistakes are collected with file and line.
void read_table(const fs::path& path, Table& t, std::map<std::string, std::string>& names) {
    std::ifstream in(path);
    if (!in) t.errors.push_back("cannot read " + path.string());
    std::string line;
    int number = 0;
    const std::string file = path.filename().string();
    while (std::getline(in, line)) {
      ++number;
      if (line.empty() || line[0] == '#') continue;
      const auto f = split_tabs(line);
      const std::string at = file + ":" + std::to_string(number);
      auto need = [&](std::size_t n) {
        if (f.size() >= n) return true;
        t.errors.push_back(at + ": '" + f[0] + "' needs " + std::to_string(n - 1) + " fields");
        return false;
      };
      if (f[0] == "case") {
        if (!need(4)) continue;
        Case c;
        c.name = f[1];
        c.where = at;
        c.exit_code = std::atoi(f[2].c_str());
        c.fragment = unescape(f[3]);
        for (std::size_t i = 4; i < f.size(); ++i) c.args.push_back(unescape(f[i]));
        if (!names.emplace(c.name, at).second) {
          t.errors.push_back(at + ": case '" + c.name + "' also at " + names[c.name]);
        }
        for (char ch : c.name) {
          if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') {
            t.errors.push_back(at + ": case names are [A-Za-z0-9_]: '" + c.name + "'");
            break;
          }
        }
        t.cases.push_back(std::move(c));
        continue;
      }
      if (t.cases.empty()) {
        t.errors.push_back(at + ": '" + f[0] + "' before any case");
        continue;
      }
      Case& c = t.cases.back();
      if (f[0] == "file" || f[0] == "copy" || f[0] == "copydir" || f[0] == "link" ||
          f[0] == "mode") {
        if (need(3)) c.setup.push_back({f[0], f[1], unescape(f[2])});
      } else if (f[0] == "fifo" || f[0] == "dir") {
        if (need(2)) c.setup.push_back({f[0], f[1], {}});
      } else if (f[0] == "same" || f[0] == "absent" || f[0] == "contains" || f[0] == "points") {
        if (need(2)) c.checks.push_back({f[0], f[1], f.size() > 2 ? unescape(f[2]) : ""});
      } else if (f[0] == "env") {
        if (need(3)) c.env[f[1]] = unescape(f[2]);
      } else if (f[0] == "unprivileged") {
        c.unprivileged = true;
      } else if (f[0] == "timeout") {
        if (need(2)) c.timeout_s = std::atoi(f[1].c_str());
      } else {
        t.errors.push_back(at + ": unknown directive '" + f[0] + "'");
      }
    }
}

// The table, read once. Its own mistakes are collected and reported by a test of their own.
const Table& table() {
  static const Table loaded = [] {
    Table t;
    std::map<std::string, std::string> names;  // case name -> where
    for (const fs::path& path : table_files(t.errors)) read_table(path, t, names);
    return t;
  }();
  return loaded;
}

std::string expand(std::string text, const fs::path& dir) {
  const std::pair<std::string, std::string> tokens[] = {{"{dir}", dir.string()},
                                                        {"{src}", BIGMAC_SOURCE_DIR}};
  for (const auto& [token, value] : tokens) {
    for (std::size_t at = text.find(token); at != std::string::npos;
         at = text.find(token, at + value.size())) {
      text.replace(at, token.size(), value);
    }
  }
  return text;
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class BadInput : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("bigmac-bad-input-" + std::to_string(::getpid()) + "-" + GetParam().name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    // A case may have taken permissions away; give them back so the folder can go.
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir_, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_symlink())
        fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
    }
    fs::remove_all(dir_, ec);
  }

  void place(const Step& s) {
    const fs::path p = dir_ / s.path;
    fs::create_directories(p.parent_path());
    if (s.kind == "file") {
      std::ofstream(p, std::ios::binary) << expand(s.value, dir_);
    } else if (s.kind == "copy") {
      fs::copy_file(expand(s.value, dir_), p, fs::copy_options::overwrite_existing);
    } else if (s.kind == "copydir") {
      fs::copy(expand(s.value, dir_), p,
               fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    } else if (s.kind == "link") {
      fs::create_symlink(expand(s.value, dir_), p);
    } else if (s.kind == "fifo") {
      ASSERT_EQ(::mkfifo(p.c_str(), 0644), 0) << p;
    } else if (s.kind == "dir") {
      fs::create_directories(p);
    } else if (s.kind == "mode") {
      ASSERT_EQ(::chmod(p.c_str(), static_cast<mode_t>(std::stoi(s.value, nullptr, 8))), 0) << p;
    }
  }

  fs::path dir_;
};

TEST(BadInputTable, IsWellFormedAndLargeEnough) {
  const Table& t = table();
  for (const std::string& e : t.errors) ADD_FAILURE() << e;
  if (std::getenv("BIGMAC_BAD_INPUT_CASES") == nullptr) {
    EXPECT_GE(t.cases.size(), 250u);
  }
}

TEST_P(BadInput, ExitsWithTheDocumentedCodeAndSaysWhy) {
  const Case& c = GetParam();
  SCOPED_TRACE(c.where);
  for (const Step& s : c.setup) place(s);
  std::map<std::string, std::string> before;
  for (const Step& s : c.checks) {
    if (s.kind == "same") before[s.path] = read_all(dir_ / s.path);
  }
  if (c.unprivileged) {
    // nobody must be able to reach the scratch directory to meet the permission it tests.
    fs::permissions(dir_, fs::perms::all);
  }
  BoundedRun run;
  run.argv.push_back(binary_path());
  for (const std::string& a : c.args) run.argv.push_back(expand(a, dir_));
  for (const auto& [k, v] : c.env) run.extra_env[k] = expand(v, dir_);
  run.cwd = dir_.string();
  run.timeout = std::chrono::seconds(c.timeout_s);
  run.unprivileged = c.unprivileged;
  const auto r = run_bounded(run);
  const std::string output = r.out + r.err;
  ASSERT_FALSE(r.timed_out) << "hang: no exit within " << c.timeout_s << " s\n" << output;
  EXPECT_LT(r.exit_code, 128) << "crash (signal " << r.exit_code - 128 << ")\n" << output;
  EXPECT_EQ(r.exit_code, c.exit_code) << output;
  EXPECT_NE(output.find(expand(c.fragment, dir_)), std::string::npos)
      << "the message lacks \"" << c.fragment << "\":\n"
      << output;
  EXPECT_EQ(output.find("internal error"), std::string::npos) << output;
  EXPECT_EQ(output.find("runtime error:"), std::string::npos) << output;  // UBSan
  EXPECT_EQ(output.find("AddressSanitizer"), std::string::npos) << output;
  for (const Step& s : c.checks) {
    const fs::path p = dir_ / s.path;
    std::error_code ec;
    if (s.kind == "same") {
      EXPECT_EQ(read_all(p), before[s.path]) << s.path << " was changed";
    } else if (s.kind == "absent") {
      EXPECT_FALSE(fs::exists(fs::symlink_status(p, ec))) << s.path << " was created";
    } else if (s.kind == "contains") {
      EXPECT_NE(read_all(p).find(expand(s.value, dir_)), std::string::npos)
          << s.path << " lacks \"" << s.value << "\"";
    } else if (s.kind == "points") {
      EXPECT_TRUE(fs::is_symlink(fs::symlink_status(p, ec))) << s.path << " is no longer a link";
      EXPECT_EQ(fs::read_symlink(p, ec).string(), expand(s.value, dir_)) << s.path;
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) { return info.param.name; }

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BadInput);
INSTANTIATE_TEST_SUITE_P(Table, BadInput, ::testing::ValuesIn(table().cases), case_name);

}  // namespace
