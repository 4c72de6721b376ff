#include "sim/collectives/network_fold.h"

#include <map>
#include <utility>

namespace cs::coll {

using topo::LinkId;

NetworkFold::NetworkFold(const topo::Cluster& cluster, topo::ServerOrbits orbits, net::FlowNetwork& net)
    : cluster_(cluster), orbits_(std::move(orbits)), net_(net) {}

LinkId NetworkFold::map(LinkId link) {
  if (link.value >= cluster_.link_count()) {  // a virtual link (reduction engine): not folded
    broken_ = true;
    return link;
  }
  const LinkId root = orbits_.orbit(link);
  if (scaled_.insert(root.value).second) {
    const double capacity = net_.capacity(root).value() * static_cast<double>(orbits_.orbit_size(root)) /
                            static_cast<double>(orbits_.servers());
    net_.set_capacity(root, Bandwidth{capacity});
  }
  return root;
}

bool fabric_latency_per_tier(const topo::Cluster& cluster) {
  std::map<int, Duration> latency;
  for (std::uint32_t i = 0; i < cluster.link_count(); ++i) {
    const topo::LinkInfo& l = cluster.link(LinkId{i});
    if (cluster.node(l.src).server >= 0 || cluster.node(l.dst).server >= 0) continue;
    const auto [it, fresh] = latency.try_emplace(l.tier, l.latency);
    if (!fresh && it->second != l.latency) return false;
  }
  return true;
}

}  // namespace cs::coll
