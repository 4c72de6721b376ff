#include "sim/collectives/network_layout.h"

#include <algorithm>

namespace cs::coll {

using topo::LinkId;
using topo::NodeId;

namespace {

// The network class efficiency was replaced by a cluster file or a calibration profile.
bool network_class_replaced(const ProtocolParams& p) {
  const auto it = p.facts.find("/link_classes/network/efficiency");
  return it != p.facts.end() && (it->second.kind == "user" || it->second.kind == "measured");
}

// The lowest packet efficiency among the cluster's NICs; 0 when none has a packet format.
double fabric_packet_efficiency(const topo::Cluster& c) {
  double lowest = 0;
  for (std::uint32_t i = 0; i < c.node_count(); ++i) {
    const topo::NodeInfo& n = c.node(NodeId{i});
    if (n.kind != topo::NodeKind::kNic || !(n.packet_efficiency > 0)) continue;
    lowest = lowest > 0 ? std::min(lowest, n.packet_efficiency) : n.packet_efficiency;
  }
  return lowest;
}

// The packet efficiency of a network link's NIC end; 0 when neither end is a NIC with one.
double nic_end_efficiency(const topo::Cluster& c, const topo::LinkInfo& l) {
  for (NodeId end : {l.src, l.dst}) {
    const topo::NodeInfo& n = c.node(end);
    if (n.kind == topo::NodeKind::kNic && n.packet_efficiency > 0) return n.packet_efficiency;
  }
  return 0;
}

}  // namespace

std::vector<double> link_efficiencies(const Machine& machine) {
  const topo::Cluster& c = machine.cluster;
  const bool replaced = network_class_replaced(machine.protocol);
  const double fabric = replaced ? 0 : fabric_packet_efficiency(c);
  std::vector<double> out(c.link_count());
  for (std::uint32_t i = 0; i < c.link_count(); ++i) {
    const topo::LinkInfo& l = c.link(LinkId{i});
    double e = machine.protocol.of(l.link_class).efficiency;
    if (l.link_class == hw::LinkClass::kNetwork && fabric > 0) {
      const double nic = nic_end_efficiency(c, l);
      e = nic > 0 ? nic : fabric;
    }
    out[i] = e;
  }
  return out;
}

bool uses_network_class_efficiency(const Machine& machine) {
  const topo::Cluster& c = machine.cluster;
  bool has_network = false;
  for (std::uint32_t i = 0; i < c.link_count() && !has_network; ++i) {
    has_network = c.link(LinkId{i}).link_class == hw::LinkClass::kNetwork;
  }
  if (!has_network) return false;
  return network_class_replaced(machine.protocol) || !(fabric_packet_efficiency(c) > 0);
}

NetworkLayout::NetworkLayout(const Machine& machine)
    : machine_(machine), schedules_(machine.cluster), efficiency_(link_efficiencies(machine)) {
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

std::shared_ptr<const topo::LikeSwitches> NetworkLayout::like_switches() const {
  std::call_once(like_switches_->once, [this] { like_switches_->like = topo::like_switches(cluster()); });
  return like_switches_->like;
}

std::shared_ptr<const topo::ServerTwins> NetworkLayout::server_twins() const {
  std::call_once(server_twins_->once, [this] { server_twins_->twins = topo::ServerSymmetry(cluster()).server_twins(); });
  return server_twins_->twins;
}

std::shared_ptr<const topo::TwinQuotient> NetworkLayout::twin_quotient(
    const std::shared_ptr<const topo::SwitchTwins>& twins) const {
  const std::lock_guard<std::mutex> lock(quotients_->mutex);
  for (const auto& q : quotients_->built) {
    if (q->twins == twins) return q;
  }
  return quotients_->built.emplace_back(topo::twin_quotient(cluster(), twins));
}

Bandwidth NetworkLayout::usable_bandwidth(LinkId id) const {
  return scale(cluster().link(id).bandwidth, efficiency_.at(id.value));
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
