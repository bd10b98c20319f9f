#pragma once

#include <gtest/gtest.h>

#include "diagnose/diagnoser.h"

namespace bigmac::diagnose::test_support {

/// The diagnoser over the built-in catalog (stages/diagnoses.toml), built once per test binary.
inline const Diagnoser& builtin_diagnoser() {
  static const Diagnoser d = [] {
    auto catalog = builtin_catalog();
    EXPECT_TRUE(catalog) << catalog.error().format();
    auto made = Diagnoser::create(std::move(*catalog));
    EXPECT_TRUE(made);
    return std::move(*made);
  }();
  return d;
}

}  // namespace bigmac::diagnose::test_support
