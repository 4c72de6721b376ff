// `clustersim gemm`: what the GEMM shape model (sim/compute/gemm_model.h) makes of given shapes on
// a GPU, or of every GEMM of an experiment's training iteration: the tile, tiles and waves, the
// shape efficiency eta, and the time and rate the compute model gives (launch, roofline).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/units.h"
#include "drivers/experiment.h"
#include "hardware/catalog.h"
#include "sim/compute/gemm_model.h"
#include "taskgraph/task_graph.h"

namespace cs::drv {

struct GemmRow {
  tg::GemmShape shape;
  compute::GemmTiling tiling;
  Duration time{0};        // one GEMM alone: launch + max(FLOP time, operand bytes / HBM)
  FlopRate rate{0};        // its FLOPs over that time
  bool memory_bound = false;
  std::int64_t ops = 0;    // experiment: the ops of one iteration (simulated ranks) that run it
};

struct GemmReport {
  std::string gpu;
  std::string dtype;
  FlopRate peak{0};        // datasheet, for the fraction of peak
  FlopRate full_rate{0};   // R_full: the MAMF over eta of its shape
  double sustained = 0;    // efficiency.gemm
  std::vector<GemmRow> rows;
  // Experiment: eta over the iteration's GEMM FLOPs, sum(F) / sum(F / eta_mix) over its ops.
  double iteration_efficiency = 0;
};

// The shapes given (each m, n, k >= 1), on `gpu` in `dtype`.
GemmReport gemm_report(const hw::GpuSpec& gpu, const std::string& dtype, const std::vector<tg::GemmShape>& shapes);
// The distinct GEMM shapes of the experiment's training graph, on its cluster's first GPU.
GemmReport experiment_gemm_report(const Experiment& e);

std::string to_table(const GemmReport& r);
nlohmann::json to_json(const GemmReport& r);

}  // namespace cs::drv
