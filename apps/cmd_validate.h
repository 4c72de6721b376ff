// `clustersim validate megatron`: predictions against the Megatron-LM SC21 table
// (cmd_validate_megatron.cpp); `clustersim validate nccl`: NCCL bus bandwidth on single nodes
// (cmd_validate_nccl.cpp); `clustersim validate profile FILE`: a calibration profile's
// measurements (cmd_validate_profile.cpp). Records a constant was fitted on are reported apart
// from the records that check it (docs/validation.md).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "drivers/sensitivity.h"

namespace cs::cli {

struct ValidateOptions {
  std::string rows;  // "1,2,5" (1-based); empty: all
  std::string table;  // megatron, nccl: a records file other than the default (configs/validation/*.json)
  bool json = false;
  bool refit = false;           // refit each fitted constant from its records and print it
  bool leave_one_out = false;   // megatron: each row predicted by the constant fitted on the others
  bool sensitivity = false;     // each point's error change with each assumed or fitted value at -10% / +10%
  std::string grid = "0.85,0.9,0.95,1,1.05,1.1,1.15";  // megatron refit: factors of the fitted value simulated
  bool grid_given = false;                            // --grid on the command line (it needs --refit or --leave-one-out)
  std::string profile;  // validate profile FILE
  std::string nic = "NDR-400G";  // the NIC of multi-node profiles' rebuilt cluster
};

CLI::App* add_validate_command(CLI::App& app, ValidateOptions& opts);
int run_validate_megatron(const ValidateOptions& opts);
int run_validate_nccl(const ValidateOptions& opts);
int run_validate_profile(const ValidateOptions& opts);

// A sensitivity table (drivers/sensitivity.h): one line per value and factor, one column per point.
void print_sensitivity(const std::vector<drv::SensitivityRow>& rows, const std::vector<std::string>& point_names, bool json);

// Progress lines on standard error, on a terminal only ("\r  simulating ...").
void progress_line(const std::string& what);
void clear_progress();

}  // namespace cs::cli
