// `clustersim plan EXPERIMENT.json --emit-graph graph.json`: the TaskGraph of one training
// iteration, without simulating it.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace cs::cli {

struct PlanOptions {
  std::string experiment;
  std::vector<std::string> overrides;
  std::string emit_graph;
};

CLI::App* add_plan_command(CLI::App& app, PlanOptions& opts);
int run_plan_command(const PlanOptions& opts);

}  // namespace cs::cli
