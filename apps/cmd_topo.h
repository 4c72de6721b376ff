// `clustersim topo info|export`: what a cluster file describes.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace cs::cli {

struct TopoOptions {
  std::string cluster;
  std::vector<std::string> overrides;
  bool json = false;
  bool dot = false;
  std::string output;  // export: file to write (default: standard output)
};

void add_topo_commands(CLI::App& app, TopoOptions& info, TopoOptions& export_opts);
int run_topo_info(const TopoOptions& opts);
int run_topo_export(const TopoOptions& opts);

}  // namespace cs::cli
