#include "trainer/collective_ledger.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <source_location>
#include <string>
#include <vector>

namespace bigmac::trainer {
namespace {

struct Ledger {
  Ledger() {
    std::filesystem::remove(path);
    auto opened = LogWriter::open(path.string(), 3);
    if (!opened) throw std::runtime_error("cannot open " + path.string());
    writer.emplace(std::move(*opened));
  }
  ~Ledger() { std::filesystem::remove(path); }
  std::vector<nlohmann::json> entries() const {
    std::vector<nlohmann::json> out;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  }
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("bigmac-ledger-" + std::to_string(getpid()) + ".jsonl");
  std::optional<LogWriter> writer;
};

std::source_location here(std::source_location where = std::source_location::current()) {
  return where;
}

TEST(CollectiveLedger, NumbersEachGroupApartAndNamesTheCallingLine) {
  Ledger file;
  CollectiveLedger ledger(*file.writer, 3);
  ledger.set_step(7);
  const std::source_location first = here();
  ledger.record("all_reduce", "world", {145}, "float32", first);
  ledger.record("send", channel_key(3, 4), {2, 8, 64}, "float32", here());
  ledger.set_step(8);
  ledger.record("barrier", "world", {}, "", here());
  ledger.record("recv", channel_key(4, 3), {2, 8, 64}, "float32", here());
  ledger.record("send", channel_key(3, 4), {2, 8, 64}, "float32", here());

  const std::vector<nlohmann::json> e = file.entries();
  ASSERT_EQ(e.size(), 5u);
  for (const auto& entry : e) {
    EXPECT_EQ(entry.at("ev"), "coll");
    EXPECT_EQ(entry.at("rank"), 3);
    EXPECT_EQ(entry.at("fn"), "TestBody") << entry.dump();
  }
  EXPECT_EQ(e[0].at("group"), "world");
  EXPECT_EQ(e[0].at("seq"), 0);
  EXPECT_EQ(e[0].at("op"), "all_reduce");
  EXPECT_EQ(e[0].at("shape"), nlohmann::json::array({145}));
  EXPECT_EQ(e[0].at("dtype"), "float32");
  EXPECT_EQ(e[0].at("global_step"), 7);
  EXPECT_EQ(e[0].at("site"), "collective_ledger_test.cpp:" + std::to_string(first.line()));
  // The barrier is world's second call; a channel counts its own, each direction apart.
  EXPECT_EQ(e[2].at("group"), "world");
  EXPECT_EQ(e[2].at("seq"), 1);
  EXPECT_EQ(e[2].at("global_step"), 8);
  EXPECT_FALSE(e[2].contains("shape")) << "a barrier has no input";
  EXPECT_EQ(e[1].at("group"), "3->4");
  EXPECT_EQ(e[1].at("seq"), 0);
  EXPECT_EQ(e[3].at("group"), "4->3");
  EXPECT_EQ(e[3].at("seq"), 0);
  EXPECT_EQ(e[4].at("group"), "3->4");
  EXPECT_EQ(e[4].at("seq"), 1);
}

struct Scope {
  static std::string member() { return function_of(std::source_location::current()); }
};

TEST(CollectiveLedger, FunctionNamesAreBare) {
  EXPECT_EQ(Scope::member(), "member") << "without scope, return type or signature";
  EXPECT_EQ(function_of(here()), "TestBody");
  EXPECT_EQ(site_of(here()).rfind("collective_ledger_test.cpp:", 0), 0u);
}

}  // namespace
}  // namespace bigmac::trainer
