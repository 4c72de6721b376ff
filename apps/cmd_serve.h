// `clustersim serve SCENARIO.json [--out DIR] [--json]`: an inference-serving simulation
// (docs/serving.md, drivers/serving_sim.h), and capacity planning on it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace cs::cli {

struct ServeOptions {
  std::string scenario;
  std::vector<std::string> overrides;  // --set on the scenario file
  std::string out;
  bool force = false;
  bool json = false;
  bool max_rate = false;               // --find-max-rate
  bool min_replicas = false;           // --find-replicas
};

CLI::App* add_serve_command(CLI::App& app, ServeOptions& o);
int run_serve_command(const ServeOptions& o);

}  // namespace cs::cli
