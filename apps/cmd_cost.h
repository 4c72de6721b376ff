// `clustersim cost CLUSTER.json [--json]`: the bill of materials, capital, power, cooling and the
// amortized price of a GPU-hour of a cluster (docs/cost-model.md).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace cs::cli {

struct CostOptions {
  std::string cluster;
  std::vector<std::string> overrides;        // --set: the cluster file
  std::string prices;                        // --prices FILE: a whole price catalog
  std::vector<std::string> price_overrides;  // --set-price /pointer=value
  bool json = false;
};

CLI::App* add_cost_command(CLI::App& app, CostOptions& o);
int run_cost_command(const CostOptions& o);
// --prices and --set-price on a command that prices something (cost, run, sweep, size).
void add_price_options(CLI::App& cmd, std::string& prices, std::vector<std::string>& price_overrides);

}  // namespace cs::cli
