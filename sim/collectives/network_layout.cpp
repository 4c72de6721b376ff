#include "sim/collectives/network_layout.h"

#include <algorithm>

namespace cs::coll {

using topo::LinkId;
using topo::NodeId;

NetworkLayout::NetworkLayout(const Machine& machine)
    : machine_(machine), schedules_(machine.cluster) {
  const topo::Cluster& cluster = machine.cluster;
  for (std::uint32_t i = 0; i < cluster.node_count(); ++i) {
    const NodeId sw{i};
    const auto& n = cluster.node(sw);
    if (n.kind != topo::NodeKind::kNvSwitch || !(n.reduction_bandwidth.value() > 0)) continue;
    // The GPUs cabled to the switch, each once, in the order their cables were added.
    std::vector<NodeId> ports;
    for (LinkId l : cluster.in_links(sw)) {
      const NodeId src = cluster.link(l).src;
      if (cluster.node(src).kind == topo::NodeKind::kGpu &&
          std::find(ports.begin(), ports.end(), src) == ports.end()) {
        ports.push_back(src);
      }
    }
    if (ports.empty()) continue;
    const Bandwidth per_port{n.reduction_bandwidth.value() / static_cast<double>(ports.size())};
    for (NodeId g : ports) {
      engine_index_.emplace(std::pair{sw.value, g.value},
                            static_cast<std::uint32_t>(engines_.size()));
      engines_.push_back({sw, g, per_port});
    }
  }
}

Bandwidth NetworkLayout::usable_bandwidth(LinkId id) const {
  const topo::LinkInfo& l = cluster().link(id);
  return scale(l.bandwidth, protocol().of(l.link_class).efficiency);
}

std::vector<net::LinkCapacity> NetworkLayout::capacities() const {
  const topo::Cluster& c = cluster();
  std::vector<net::LinkCapacity> caps;
  caps.reserve(c.link_count() + engines_.size());
  for (std::uint32_t i = 0; i < c.link_count(); ++i) {
    caps.push_back({usable_bandwidth(LinkId{i}), c.link(LinkId{i}).latency});
  }
  for (const Engine& e : engines_) caps.push_back({e.capacity, Duration{0}});
  return caps;
}

std::optional<LinkId> NetworkLayout::reduction_engine(NodeId nvswitch, NodeId gpu) const {
  const auto it = engine_index_.find({nvswitch.value, gpu.value});
  if (it == engine_index_.end()) return std::nullopt;
  return LinkId{static_cast<std::uint32_t>(cluster().link_count() + it->second)};
}

std::optional<std::pair<NodeId, NodeId>> NetworkLayout::engine_port(LinkId id) const {
  if (id.value < cluster().link_count() || id.value - cluster().link_count() >= engines_.size())
    return std::nullopt;
  const Engine& e = engines_[id.value - cluster().link_count()];
  return std::pair{e.nvswitch, e.gpu};
}

}  // namespace cs::coll
