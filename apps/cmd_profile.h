// `clustersim profile synthetic GPU [--gpus N] [--out FILE]`: a calibration profile generated from
// the hardware catalog by the simulator's own models (drivers/synthetic_profile.h), marked
// "synthetic": the format and the tools that read profiles, without a GPU.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace cs::cli {

struct ProfileOptions {
  std::string gpu;   // catalog GPU name
  int gpus = 8;      // GPUs of the one server
  std::string out = "calibration-profile.json";
  std::string command;  // the command line, for the profile's provenance
};

CLI::App* add_profile_command(CLI::App& app, ProfileOptions& opts);
int run_profile_synthetic(const ProfileOptions& opts);

}  // namespace cs::cli
