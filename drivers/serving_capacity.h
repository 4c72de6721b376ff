// Capacity planning on the serving simulator (docs/serving.md, "Capacity planning"), as
// Vidur-Search does it: an SLO is met when TTFT p90 <= slo.ttft and TPOT p99 <= slo.tpot over the
// completed requests, and no request was rejected or lost.
//
// max_rate: the highest load that meets the SLO, by doubling (or halving) a load factor from the
// scenario's own and then bisecting to `tolerance` relative; the load factor multiplies a
// synthetic stream's rate, or divides a trace's time scale (the same requests, arriving faster).
// min_replicas: the fewest replicas (so the fewest GPUs, at the scenario's TP) that meet the SLO
// for the scenario's stream, by doubling then bisecting, within the cluster's GPUs.
// Both assume that meeting the SLO is monotone in the load and in the replica count.
#pragma once

#include <optional>
#include <vector>

#include "drivers/serving_config.h"
#include "results/serving_report.h"

namespace cs::drv {

struct CapacityProbe {
  double load = 1;   // load factor (max_rate) or replicas (min_replicas)
  double rate = 0;   // offered requests per second
  bool meets = false;
  results::ServingMetrics metrics;
};

struct CapacityResult {
  std::optional<CapacityProbe> best;  // empty: nothing met the SLO
  std::vector<CapacityProbe> probes;  // in the order simulated
};

// Whether a run meets the scenario's SLO (which must set ttft or tpot).
bool meets_slo(const ServingScenario& s, const results::ServingMetrics& m);
CapacityResult find_max_rate(const ServingScenario& s, double tolerance = 0.01);
CapacityResult find_min_replicas(const ServingScenario& s);

}  // namespace cs::drv
