// Private to topology/: the Boost.Graph representation behind Cluster. Include only from
// topology/*.cpp. Vertex i is NodeId{i}; each edge carries its LinkId.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "topology/cluster.h"

namespace cs::topo {

struct VertexProps {
  NodeId id;
};
struct EdgeProps {
  LinkId id;
};
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, VertexProps,
                                    EdgeProps>;

struct Cluster::Impl {
  std::string name;
  Graph graph;
  std::vector<NodeInfo> nodes;
  std::vector<LinkInfo> links;
  std::vector<std::vector<LinkId>> out;  // per node, in insertion order
  std::vector<std::vector<LinkId>> in;
  std::vector<NodeId> gpus;
  std::vector<const hw::GpuSpec*> gpu_specs;  // per node; null except for GPUs
  std::vector<std::unique_ptr<hw::GpuSpec>> owned_specs;
  std::unordered_map<std::string, NodeId> by_name;
};

}  // namespace cs::topo
