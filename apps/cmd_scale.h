// `clustersim scale EXPERIMENT.json --gpus 8,16,32 [--weak]`: the same training at several GPU
// counts, with speedup and efficiency against the smallest, and where adding GPUs stops paying.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace cs::cli {

struct ScaleOptions {
  std::string experiment;
  std::vector<std::string> overrides;
  std::vector<std::string> hardware;  // --set-hardware on the hardware catalog
  std::string gpus = "1,2,4,8,16,32";
  std::string profile;  // --profile: a calibration profile for every point
  bool weak = false;
  bool json = false;
};

CLI::App* add_scale_command(CLI::App& app, ScaleOptions& opts);
int run_scale_command(const ScaleOptions& opts);
// Runs one scaling study and prints it; used by `scale` and by the default `run`.
int print_scaling(const ScaleOptions& opts, bool json);

}  // namespace cs::cli
