#pragma once

// Runs bigmac-train ranks for the end-to-end tests and reads their bigmac-log v1 output.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "testing/rank_harness.h"

namespace bigmac::testing {

inline std::string train_binary() { return BIGMAC_BIN_DIR "/bigmac-train"; }

/// The events of one log file. Bare NaN / Infinity (as Python's json writes them) become the
/// strings "NaN" / "Infinity" so nlohmann can parse the line; number_of() maps them back.
class TrainLog {
 public:
  static TrainLog read(const std::filesystem::path& path) {
    TrainLog log;
    std::ifstream in(path);
    static const std::regex bare(R"(:(-?Infinity|NaN)([,}]))");
    for (std::string line; std::getline(in, line);) {
      // A line without its newline is still being written (read while the rank runs).
      if (line.empty() || in.eof()) continue;
      log.events.push_back(nlohmann::json::parse(std::regex_replace(line, bare, ":\"$1\"$2")));
    }
    return log;
  }

  std::vector<nlohmann::json> of(const std::string& ev) const {
    std::vector<nlohmann::json> out;
    for (const auto& event : events) {
      if (event.at("ev") == ev) out.push_back(event);
    }
    return out;
  }

  /// `heartbeat` events of finished steps (each step also has one with phase "start").
  std::vector<nlohmann::json> finished_heartbeats() const {
    std::vector<nlohmann::json> out;
    for (const auto& event : of("heartbeat")) {
      if (event.value("phase", "end") == "end") out.push_back(event);
    }
    return out;
  }

  std::vector<double> values(const std::string& ev, const std::string& field) const {
    std::vector<double> out;
    for (const auto& event : of(ev)) out.push_back(number_of(event.at(field)));
    return out;
  }

  static double number_of(const nlohmann::json& value) {
    if (value.is_string()) {
      std::string text = value;
      if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
      return text[0] == '-' ? -std::numeric_limits<double>::infinity()
                            : std::numeric_limits<double>::infinity();
    }
    return value.get<double>();
  }

  std::vector<nlohmann::json> events;
};

/// A temporary directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            (std::string("bigmac-trainer-") + info->test_suite_name() + "-" + info->name() + "-" +
             std::to_string(getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

/// Settings every end-to-end run uses: one intra-op thread per rank on a shared 2-core machine.
inline std::vector<std::string> base_args(const std::filesystem::path& log_file) {
  return {train_binary(), "--log-file", log_file.string(), "--set", "launch.threads_per_rank=1"};
}

/// N ranks of bigmac-train with the torchrun environment, logs in dir/rank<R>.jsonl and
/// stderr in dir/rank<R>.err.
struct RankJob {
  explicit RankJob(std::filesystem::path log_dir) : dir(std::move(log_dir)) {}

  RankHarness harness;
  std::filesystem::path dir;
  int world_size = 0;
  int port = 0;

  std::filesystem::path log(int rank) const {
    return dir / ("rank" + std::to_string(rank) + ".jsonl");
  }
  std::filesystem::path err(int rank) const {
    return dir / ("rank" + std::to_string(rank) + ".err");
  }

  static std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  std::string stderr_of(int rank) const { return read_text(err(rank)); }

  void start(int ranks, const std::vector<std::string>& extra_args,
             const std::map<int, std::map<std::string, std::string>>& env_per_rank = {}) {
    world_size = ranks;
    port = free_port();
    for (int rank = 0; rank < ranks; ++rank) {
      auto args = base_args(log(rank));
      args.insert(args.end(), extra_args.begin(), extra_args.end());
      std::map<std::string, std::string> env = {
          {"RANK", std::to_string(rank)},        {"WORLD_SIZE", std::to_string(ranks)},
          {"LOCAL_RANK", std::to_string(rank)},  {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", std::to_string(port)}, {"OMP_NUM_THREADS", "1"}};
      if (auto it = env_per_rank.find(rank); it != env_per_rank.end()) {
        for (const auto& [key, value] : it->second) env[key] = value;
      }
      harness.spawn(args, env, dir / ("rank" + std::to_string(rank) + ".out"), err(rank));
    }
  }

  /// Number of `ev` events rank has written so far (0 when the file is not there yet); for
  /// "heartbeat", those of finished steps.
  std::size_t count(int rank, const std::string& ev) const {
    std::ifstream in(log(rank));
    std::string needle = "\"ev\":\"" + ev + "\"";
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);) {
      n += line.find(needle) != std::string::npos &&
           line.find("\"phase\":\"start\"") == std::string::npos;
    }
    return n;
  }

  /// The last whole line rank has written ("" before any).
  std::string last_line(int rank) const {
    std::ifstream in(log(rank));
    std::string last;
    for (std::string line; std::getline(in, line);) {
      if (in.eof()) break;  // no newline yet: a line still being written
      last = line;
    }
    return last;
  }

  /// Whether rank has logged that it began `step` (a heartbeat with phase "start").
  bool began(int rank, int step) const {
    std::ifstream in(log(rank));
    const std::string needle = "\"global_step\":" + std::to_string(step) + ",";
    for (std::string line; std::getline(in, line);) {
      if (line.find("\"phase\":\"start\"") != std::string::npos &&
          line.find(needle) != std::string::npos)
        return true;
    }
    return false;
  }
};

/// Runs one process to completion (deadline: the test fails and the process is killed).
inline RankEnd run_single(const std::filesystem::path& dir, const std::vector<std::string>& args,
                          std::chrono::milliseconds deadline = 90000ms) {
  RankHarness harness;
  harness.spawn(args, {{"OMP_NUM_THREADS", "1"}}, dir / "single.out", dir / "single.err");
  bool finished = harness.wait_all(deadline);
  EXPECT_TRUE(finished) << "bigmac-train did not finish within the deadline";
  harness.kill_all();
  return *harness.end(0);
}

}  // namespace bigmac::testing
