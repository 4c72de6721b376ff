// Checks that every GPU can reach every other GPU over directed links.
#pragma once

#include <string>

#include "topology/cluster.h"

namespace cs::topo {

// Throws TopologyError naming `file`, the origin JSON path of a GPU that cannot reach (or be
// reached from) the first GPU, and both GPU names: "GPU node1/gpu3 has no path to node0/gpu0".
// O(V + E): one forward and one backward search from the first GPU.
void check_gpus_connected(const Cluster& cluster, const std::string& file);

}  // namespace cs::topo
