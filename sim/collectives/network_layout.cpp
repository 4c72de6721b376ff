#include "sim/collectives/network_layout.h"

namespace cs::coll {

using topo::LinkId;
using topo::NodeId;

NetworkLayout::NetworkLayout(const Machine& machine) : machine_(machine), schedules_(machine.cluster) {
  const topo::Cluster& cluster = machine.cluster;
  for (std::uint32_t i = 0; i < cluster.node_count(); ++i) {
    const auto& n = cluster.node(NodeId{i});
    if (n.kind == topo::NodeKind::kNvSwitch && n.reduction_bandwidth.value() > 0) {
      engines_.emplace_back(NodeId{i}, n.reduction_bandwidth);
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
  for (const auto& e : engines_) caps.push_back({e.second, Duration{0}});
  return caps;
}

std::optional<LinkId> NetworkLayout::reduction_engine(NodeId nvswitch) const {
  for (std::size_t k = 0; k < engines_.size(); ++k) {
    if (engines_[k].first == nvswitch) {
      return LinkId{static_cast<std::uint32_t>(cluster().link_count() + k)};
    }
  }
  return std::nullopt;
}

}  // namespace cs::coll
