// `clustersim collective`: one collective or a size sweep on a cluster, nccl-tests style.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace cs::cli {

struct CollectiveOptions {
  std::string cluster;
  std::vector<std::string> overrides;
  std::string op = "all_reduce";
  std::string bytes = "1GiB";
  std::string sweep;  // "MIN:MAX" or "MIN:MAX:FACTOR"
  std::size_t ranks = 0;  // 0 = every GPU
  std::string algo = "auto";
  std::string trace;
  std::string profile;  // --profile: link efficiencies and step latencies from a calibration profile
  bool json = false;
};

void add_collective_command(CLI::App& app, CollectiveOptions& opts);
int run_collective_command(const CollectiveOptions& opts);

}  // namespace cs::cli
