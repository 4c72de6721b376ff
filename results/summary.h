// summary.json of a training run (docs/outputs.md): the plan, iteration time, throughput, MFU,
// memory, the mean stall breakdown, network traffic by tier and the busiest links.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "results/training_run.h"
#include "workloads/parallel_plan.h"

namespace cs::results {

nlohmann::json summary_json(const std::string& experiment, const wl::ParallelPlan& plan, const TrainingRun& run);
// Bytes the iteration carried per link tier (0 in a server, 1 endpoint-leaf, 2 leaf-spine, 3
// spine-core), as summary.json's network.bytes_by_tier and the sweep rows count them.
std::array<std::int64_t, 4> bytes_by_tier(const TrainingRun& run);

// The assumed and fitted values a prediction rests on, as summary.json's "assumptions" lists them:
// value_of, file, value, kind, status.
nlohmann::json assumptions_json(const std::vector<SourcedFact>& facts);
// summary.json's "energy" (null when the run has none) and "goal" (null without a goal).
nlohmann::json energy_json(const TrainingRun& run);
nlohmann::json goal_json(const TrainingRun& run);

}  // namespace cs::results
