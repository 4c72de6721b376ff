// `clustersim run [EXPERIMENT.json]`: one training iteration of an experiment, or the built-in
// default experiment when none is given; with --trace, a recorded workload (Chakra traces or a
// TaskGraph file) replayed on the experiment's cluster instead of its model and plan.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "drivers/trace_workload.h"

namespace cs::cli {

struct RunOptions {
  std::string experiment;              // empty: the built-in default
  std::vector<std::string> overrides;  // --set on the experiment file
  std::vector<std::string> hardware;   // --set-hardware on the hardware catalog
  std::string out;                     // --out DIR: write the output files there
  bool force = false;                  // --force: replace an --out folder that holds files
  std::string model;                   // --model: replaces the experiment's model
  std::string profile;                 // --profile: a calibration profile (replaces options.profile)
  bool json = false;
  bool allow_oom = false;              // simulate even when the memory estimate does not fit
  std::string prices;                  // --prices FILE
  std::vector<std::string> price_overrides;  // --set-price
  std::optional<double> train_tokens;  // --train-tokens: the goal
  drv::TraceSource trace;              // --trace and its options: a recorded workload replaces the model and plan
  std::string placement;               // --placement: the GPU of each rank of a trace
};

CLI::App* add_run_command(CLI::App& app, RunOptions& opts);
int run_experiment_command(const RunOptions& opts);

}  // namespace cs::cli
