#include "apps/cmd_validate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "apps/cli_common.h"
#include "core/config.h"
#include "core/errors.h"
#include "core/statistics.h"
#include "drivers/training_records.h"
#include "drivers/training_run.h"

#ifndef CS_CONFIG_DIR
#define CS_CONFIG_DIR "configs"
#endif

namespace cs::cli {
namespace {

std::vector<std::size_t> parse_rows(const std::string& text, std::size_t count) {
  std::vector<std::size_t> rows;
  if (text.empty()) {
    for (std::size_t i = 0; i < count; ++i) rows.push_back(i);
    return rows;
  }
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t used = 0;
    long v = 0;
    try {
      v = std::stol(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < 1 || static_cast<std::size_t>(v) > count) {
      throw ConfigError("", "--rows", "expected row numbers from 1 to " + std::to_string(count) + "; got \"" + text + "\"");
    }
    rows.push_back(static_cast<std::size_t>(v - 1));
  }
  return rows;
}

}  // namespace

CLI::App* add_validate_command(CLI::App& app, ValidateOptions& o) {
  auto* v = app.add_subcommand("validate", "Compare predictions with published measurements");
  v->require_subcommand(1);
  auto* m = v->add_subcommand("megatron", "Megatron-LM SC21 Table 1: GPT 1.7B to 1T on 32 to 3,072 A100s");
  m->add_option("--rows", o.rows, "Only these rows (1-based, comma-separated)");
  m->add_flag("--json", o.json, "Print a JSON array");
  auto* pr = v->add_subcommand("profile", "A calibration profile: every measured collective, GEMM and memory-bound point, simulated");
  pr->add_option("profile", o.profile, "The profile (docs/calibration-profile.md)")->required();
  pr->add_option("--nic", o.nic, "NIC of the rebuilt cluster for multi-node points (default NDR-400G)");
  pr->add_flag("--json", o.json, "Print JSON: groups and every point");
  return v;
}

int run_validate_megatron(const ValidateOptions& o) {
  const std::string file = std::string(CS_CONFIG_DIR) + "/validation/megatron-sc21-table1.json";
  const std::vector<drv::TrainingRecord> records =
      drv::load_training_records(ConfigDocument::load(file), std::string(CS_CONFIG_DIR) + "/validation");
  const std::vector<std::size_t> rows = parse_rows(o.rows, records.size());
  nlohmann::json out = nlohmann::json::array();
  std::vector<double> errors;
  if (!o.json) {
    std::cout << "clustersim validate megatron: Narayanan et al., SC21, Table 1 (A100 SuperPOD, sequence 2048, full recomputation,\n"
                 "  the paper's micro-batches, DDP and interleaving from its run_table_1.sh; TFLOP/s per GPU as the paper's Eq. 3)\n"
                 "   row   params   GPUs   TP  PP  DP  mb  v  batch   published  predicted   error\n";
  }
  for (std::size_t i : rows) {
    const drv::Experiment& e = records[i].experiment;
    const double params = records[i].params_billion;
    const auto gpus = e.plan.gpus();
    if (!o.json && stderr_is_terminal()) std::cerr << "\r  simulating row " << i + 1 << "   " << std::flush;
    const results::TrainingRun s = drv::simulate_training(e);
    const double published = records[i].published_tflops_per_gpu;
    const double predicted = s.result.tflops_per_gpu;
    const double error = (predicted - published) / published;
    errors.push_back(std::fabs(error));
    out.push_back({{"row", i + 1},
                   {"params_billion", params},
                   {"gpus", gpus},
                   {"published_tflops_per_gpu", published},
                   {"predicted_tflops_per_gpu", predicted},
                   {"error_pct", 100 * error},
                   {"iteration_time_s", to_seconds(s.result.iteration)}});
    if (!o.json) {
      if (stderr_is_terminal()) std::cerr << "\r" << std::string(30, ' ') << "\r";
      char line[200];
      std::snprintf(line, sizeof line, "  %4zu %8.1fB %6lld %4d %3d %3d %3d %2d %6d %11.0f %10.1f %+7.1f%%\n", i + 1, params,
                    static_cast<long long>(gpus), e.plan.tp, e.plan.pp, e.plan.dp, e.plan.micro_batch, e.plan.virtual_stages,
                    e.plan.global_batch, published, predicted, 100 * error);
      std::cout << line;
    }
  }
  if (o.json) {
    std::cout << out.dump(2) << "\n";
  } else {
    std::printf("  median |error| %.1f%%, worst %.1f%%\n", 100 * median(errors), 100 * *std::max_element(errors.begin(), errors.end()));
  }
  return 0;
}

}  // namespace cs::cli
