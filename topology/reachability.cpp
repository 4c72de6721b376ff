#include "topology/reachability.h"

#include <vector>

#include "core/errors.h"

namespace cs::topo {
namespace {

// Marks every node reachable from `start` following out-links (forward) or in-links (backward).
std::vector<bool> search(const Cluster& cluster, NodeId start, bool forward) {
  std::vector<bool> seen(cluster.node_count(), false);
  std::vector<NodeId> queue{start};
  seen[start.value] = true;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const NodeId u = queue[head];
    for (LinkId l : forward ? cluster.out_links(u) : cluster.in_links(u)) {
      const NodeId v = forward ? cluster.link(l).dst : cluster.link(l).src;
      if (!seen[v.value]) {
        seen[v.value] = true;
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
