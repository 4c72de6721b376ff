// `clustersim search EXPERIMENT.json [--gpus N[,N...]] [--top K] [--simulate S]
// [--objective time|tokens_per_s|cost] [--json]`: the best parallel plans for the experiment's
// model, cluster and global batch (drivers/plan_search.h, docs/plan-search.md).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace cs::cli {

struct SearchCommandOptions {
  std::string experiment;
  std::string gpus;
  int top = 5;
  int simulate = 12;
  double headroom = 0.05;
  std::string objective = "time";
  std::string keep;  // "recompute,zero"

  std::vector<std::string> overrides;
  std::vector<std::string> hardware;
  std::string profile;
  bool json = false;
};

CLI::App* add_search_command(CLI::App& app, SearchCommandOptions& opts);
int run_search_command(const SearchCommandOptions& opts);

}  // namespace cs::cli
