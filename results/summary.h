// summary.json of a training run (docs/outputs.md): the plan, iteration time, throughput, MFU,
// memory, the mean stall breakdown, network traffic by tier and the busiest links.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "results/training_run.h"
#include "workloads/parallel_plan.h"

namespace cs::results {

nlohmann::json summary_json(const std::string& experiment, const wl::ParallelPlan& plan, const TrainingRun& run);

}  // namespace cs::results
