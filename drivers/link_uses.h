// What each cluster link carried in a run, read off the flow network (training iterations and
// trace replays).
#pragma once

#include <cstddef>
#include <vector>

#include "results/link_use.h"
#include "sim/network/flow_network.h"

namespace cs::drv {

// Flushes the network's accumulators; links that carried nothing are left out; busiest (by
// utilization of the usable capacity over `run`) first.
std::vector<results::LinkUse> link_uses(net::FlowNetwork& net, std::size_t cluster_links, Duration run);

}  // namespace cs::drv
