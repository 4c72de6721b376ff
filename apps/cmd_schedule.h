// `clustersim schedule SCENARIO.json [--out DIR] [--json]`: many jobs sharing a cluster over time
// (docs/scheduling.md, drivers/cluster_scheduler.h).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace cs::cli {

struct ScheduleOptions {
  std::string scenario;
  std::vector<std::string> overrides;  // --set on the scenario file
  std::string out;
  bool force = false;
  bool json = false;
};

CLI::App* add_schedule_command(CLI::App& app, ScheduleOptions& o);
int run_schedule_command(const ScheduleOptions& o);

}  // namespace cs::cli
