// Findings: sentences that name what a person should look at in a run.
#pragma once

#include <string>
#include <vector>

#include "core/units.h"
#include "results/stall_attribution.h"
#include "workloads/training_graph.h"

namespace cs::results {

// Names the busiest GPU and the most idle one when their compute differs by more than 2%, with
// the likely cause: pipeline stages of unequal work (they are in different stages), or one rank
// slower than its peers (a straggler). Empty when the ranks are balanced.
std::string imbalance_finding(const wl::TrainingGraph& g, const std::vector<RankBreakdown>& stalls, Duration iteration);

}  // namespace cs::results
