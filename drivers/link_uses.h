// What each cluster link carried in a run, read off the flow network (training iterations and
// trace replays).
#pragma once

#include <cstddef>
#include <vector>

#include "results/link_use.h"
#include "sim/collectives/network_fold.h"
#include "sim/network/flow_network.h"

namespace cs::drv {

// Flushes the network's accumulators; links that carried nothing are left out; busiest (by
// utilization of the usable capacity over `run`) first, links of equal utilization by id.
// `fold`: `net` is its quotient, whose link stands for its orbit's |L| links; each of them
// carried N / |L| of the quotient link's bytes, was busy when it was, and so has its utilization
// (sim/collectives/network_fold.h).
std::vector<results::LinkUse> link_uses(net::FlowNetwork& net, std::size_t cluster_links, Duration run,
                                        const coll::NetworkFold* fold = nullptr);

}  // namespace cs::drv
