// `clustersim validate megatron`: predictions against the Megatron-LM SC21 table.
// `clustersim validate profile FILE`: predictions against a calibration profile's measurements
// (cmd_validate_profile.cpp).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace cs::cli {

struct ValidateOptions {
  std::string rows;  // "1,2,5" (1-based); empty: all
  bool json = false;
  std::string profile;  // validate profile FILE
  std::string nic = "NDR-400G";  // the NIC of multi-node profiles' rebuilt cluster
};

CLI::App* add_validate_command(CLI::App& app, ValidateOptions& opts);
int run_validate_megatron(const ValidateOptions& opts);
int run_validate_profile(const ValidateOptions& opts);

}  // namespace cs::cli
