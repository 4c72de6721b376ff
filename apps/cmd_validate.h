// `clustersim validate megatron`: predictions against the Megatron-LM SC21 table.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace cs::cli {

struct ValidateOptions {
  std::string rows;  // "1,2,5" (1-based); empty: all
  bool json = false;
};

CLI::App* add_validate_command(CLI::App& app, ValidateOptions& opts);
int run_validate_megatron(const ValidateOptions& opts);

}  // namespace cs::cli
