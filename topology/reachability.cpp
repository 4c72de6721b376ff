#include "topology/reachability.h"

#include <cstdint>
#include <vector>

#include "core/errors.h"

namespace cs::topo {
namespace {

// Marks every node reachable from `start` following out-links (forward) or in-links (backward).
std::vector<bool> search(const Cluster& cluster, NodeId start, bool forward) {
  const Adjacency& adj = forward ? cluster.out_adjacency() : cluster.in_adjacency();
  std::vector<bool> seen(cluster.node_count(), false);
  std::vector<std::uint32_t> queue{start.value};
  seen[start.value] = true;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const std::uint32_t u = queue[head];
    for (std::uint32_t k = adj.begin[u]; k < adj.begin[u + 1]; ++k) {
      const std::uint32_t v = adj.node[k];
      if (!seen[v]) {
        seen[v] = true;
        queue.push_back(v);
      }
    }
  }
  return seen;
}

}  // namespace

void check_gpus_connected(const Cluster& cluster, const std::string& file) {
  const auto gpus = cluster.gpus();
  if (gpus.size() <= 1) return;
  const NodeId first = gpus.front();
  const std::string& first_name = cluster.node(first).name;

  const std::vector<bool> reached = search(cluster, first, /*forward=*/true);
  for (NodeId gpu : gpus) {
    if (!reached[gpu.value]) {
      const NodeInfo& info = cluster.node(gpu);
      throw TopologyError(file, info.origin,
                          "GPU " + info.name + " cannot be reached from " + first_name);
    }
  }
  const std::vector<bool> reaching = search(cluster, first, /*forward=*/false);
  for (NodeId gpu : gpus) {
    if (!reaching[gpu.value]) {
      const NodeInfo& info = cluster.node(gpu);
      throw TopologyError(file, info.origin, "GPU " + info.name + " has no path to " + first_name);
    }
  }
}

}  // namespace cs::topo
