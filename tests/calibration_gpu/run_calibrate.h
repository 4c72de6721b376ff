// clustersim-calibrate (CS_CALIBRATE_BIN) run by the tests of this folder.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tests/support/run_binary.h"

namespace cs::test {

inline RunResult run_calibrate(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {},
                               int timeout_s = 600) {
  return run_binary(CS_CALIBRATE_BIN, args, env, timeout_s);
}
inline std::string describe(const std::vector<std::string>& args, const RunResult& r) {
  return describe("clustersim-calibrate", args, r);
}

}  // namespace cs::test
