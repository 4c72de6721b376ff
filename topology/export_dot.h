// Graphviz export of the cluster graph, for looking at small topologies (`dot -Tsvg`).
//
// One `digraph`. Nodes are named by NodeInfo::name and shaped by kind (GPU box, NIC diamond,
// switches ellipse, host box3d, storage cylinder). A cable (two opposite links with equal
// bandwidth and class) is drawn once, from its lower-numbered link, with dir=both; any other
// link is a plain directed edge. Edges are labelled with bandwidth and link class. Nodes come
// in NodeId order and edges in LinkId order, so the output is deterministic. O(V + E).
#pragma once

#include <string>

#include "topology/cluster.h"

namespace cs::topo {

std::string export_dot(const Cluster& c);

}  // namespace cs::topo
