#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "config/config.h"

namespace bigmac::config {

/// Writes TOML to a temporary file per test and loads configurations from it.
class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  std::string write(const std::string& toml, const std::string& name = "test.toml");
  tl::expected<Config, Errors> load(const std::string& toml,
                                    std::vector<std::string> overrides = {},
                                    std::map<std::string, std::string> env = {});
  Config load_ok(const std::string& toml, std::vector<std::string> overrides = {},
                 std::map<std::string, std::string> env = {});
  Errors load_errors(const std::string& toml, std::vector<std::string> overrides = {},
                     std::map<std::string, std::string> env = {});

  std::filesystem::path dir_;
};

/// All error texts joined, for readable failure messages.
std::string join(const Errors& errors);

}  // namespace bigmac::config
