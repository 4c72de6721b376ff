#include "results/findings.h"

#include <cstdio>

namespace cs::results {

std::string imbalance_finding(const wl::TrainingGraph& g, const std::vector<RankBreakdown>& stalls, Duration iteration) {
  if (stalls.size() < 2) return "";
  auto compute = [&](std::size_t r) { return to_seconds(stalls[r].time[static_cast<int>(Stall::kCompute)]); };
  std::size_t busiest = 0, idlest = 0;
  for (std::size_t r = 1; r < stalls.size(); ++r) {
    if (compute(r) > compute(busiest)) busiest = r;
    if (compute(r) < compute(idlest)) idlest = r;
  }
  const double hi = compute(busiest), lo = compute(idlest);
  if (hi <= 0 || (hi - lo) / hi < 0.02) return "";
  const wl::GridCoord cb = g.grid.coord(g.grid_rank[busiest]), ci = g.grid.coord(g.grid_rank[idlest]);
  char buf[400];
  const double idle_share = 100 * (1 - lo / to_seconds(iteration));
  if (cb.pp != ci.pp) {
    std::snprintf(buf, sizeof buf,
                  "uneven pipeline stages: rank %d (stage %d) computes %.0f%% longer than rank %d (stage %d), which is idle %.0f%% of the iteration",
                  g.grid_rank[busiest], cb.pp, 100 * (hi / lo - 1), g.grid_rank[idlest], ci.pp, idle_share);
  } else {
    std::snprintf(buf, sizeof buf,
                  "a straggler: rank %d computes %.0f%% longer than its peers (rank %d is idle %.0f%% of the iteration, waiting for it)",
                  g.grid_rank[busiest], 100 * (hi / lo - 1), g.grid_rank[idlest], idle_share);
  }
  return buf;
}

}  // namespace cs::results
