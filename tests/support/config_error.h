// Test support: runs `f`, expects a ConfigError, and returns its full message ("" and a test
// failure when none is thrown).
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "core/errors.h"

namespace cs::test {

template <class F>
std::string config_error(F f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ConfigError";
  return "";
}

}  // namespace cs::test
