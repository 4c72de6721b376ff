// `clustersim plan EXPERIMENT.json --emit-graph graph.json`: the TaskGraph of one training
// iteration, without simulating it; `--emit-chakra DIR`: the same iteration as Chakra execution
// traces, one per rank (DIR/workload.<rank>.et, DIR/comm_groups.json), for ASTRA-sim.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace cs::cli {

struct PlanOptions {
  std::string experiment;
  std::vector<std::string> overrides;
  std::string emit_graph;
  std::string emit_chakra;  // a folder
  bool force = false;
};

CLI::App* add_plan_command(CLI::App& app, PlanOptions& opts);
int run_plan_command(const PlanOptions& opts);

}  // namespace cs::cli
