// `clustersim gemm`: the GEMM shape model on given shapes or on an experiment's GEMMs
// (drivers/gemm_report.h, docs/compute-model.md).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace cs::cli {

struct GemmOptions {
  std::string gpu;                      // a catalog GPU
  std::vector<std::string> shapes;      // "MxNxK"
  std::string experiment;               // or an experiment file
  std::vector<std::string> overrides;   // --set on the experiment
  std::string dtype = "bf16";
  bool json = false;
};

CLI::App* add_gemm_command(CLI::App& app, GemmOptions& o);
int run_gemm_command(const GemmOptions& o);

}  // namespace cs::cli
