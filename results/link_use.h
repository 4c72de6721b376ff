// What one link carried during a simulated run: training iterations and trace replays.
#pragma once

#include <span>
#include <string>

#include "core/units.h"
#include "topology/cluster.h"

namespace cs::results {

// Links that carried nothing are left out of a run's list.
struct LinkUse {
  topo::LinkId link;
  Bytes bytes{0};
  Duration busy{0};
  double utilization = 0;  // bytes / (usable capacity x run time)
};

// links.csv: one row per link that carried bytes, in the order given (busiest first).
std::string links_csv(const topo::Cluster& cluster, std::span<const LinkUse> links);

}  // namespace cs::results
