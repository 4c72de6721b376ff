// `clustersim size GOAL.json [--json]`: the sizing advisor (docs/sizing.md, drivers/sizing.h).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace cs::cli {

struct SizeOptions {
  std::string goal;
  std::string prices;
  std::vector<std::string> price_overrides;
  bool json = false;
};

CLI::App* add_size_command(CLI::App& app, SizeOptions& o);
int run_size_command(const SizeOptions& o);

}  // namespace cs::cli
