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
  if (mapped_.empty()) mapped_.assign(cluster_.link_count(), kUnmapped);
  std::uint32_t& mapped = mapped_[link.value];
  if (mapped != kUnmapped) return LinkId{mapped};
  const LinkId root = orbits_.orbit(link);
  if (mapped_[root.value] == kUnmapped) {  // the orbit's first use: its quotient capacity
    const double capacity = net_.capacity(root).value() * static_cast<double>(orbits_.orbit_size(root)) /
                            static_cast<double>(orbits_.servers());
    net_.set_capacity(root, Bandwidth{capacity});
    mapped_[root.value] = root.value;
  }
  mapped = root.value;
  return root;
}

void NetworkFold::collapse(topo::WeightedRoute& route) {
  if (entry_.empty()) {
    entry_.assign(cluster_.link_count(), 0);
    entry_epoch_.assign(cluster_.link_count(), 0);
  }
  ++epoch_;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < route.links.size(); ++i) {
    const auto [link, weight] = route.links[i];
    const LinkId root = map(link);
    if (root.value >= entry_.size()) {  // not folded (map marked the fold broken): keep as it is
      route.links[kept++] = {root, weight};
      continue;
    }
    if (entry_epoch_[root.value] != epoch_) {
      entry_epoch_[root.value] = epoch_;
      entry_[root.value] = static_cast<std::uint32_t>(kept);
      route.links[kept++] = {root, weight};
    } else {
      route.links[entry_[root.value]].second += weight;
    }
  }
  route.links.resize(kept);
  route.links.shrink_to_fit();  // a spread of thousands of links held as a few orbits
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
