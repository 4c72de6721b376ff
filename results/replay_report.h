// The outputs of a replay (results/replay_run.h; docs/chakra.md, "Replay outputs"):
// summary.json (schema "clustersim-replay", version 1), per_rank.csv, and the Perfetto trace
// (results/graph_trace.h) and links.csv (results/link_use.h) as a training run writes them.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "results/replay_run.h"

namespace cs::results {

nlohmann::json replay_summary_json(const std::string& name, const ReplayRun& run);
// One row per simulated rank: its GPU and the seconds of each stall category.
std::string replay_per_rank_csv(const ReplayRun& run);
std::string replay_trace_json(const ReplayRun& run);

}  // namespace cs::results
