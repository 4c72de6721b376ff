#include "sim/collectives/network_fold.h"

#include <map>
#include <unordered_map>
#include <utility>

#include "core/random.h"

namespace cs::coll {

using topo::LinkId;

NetworkFold::NetworkFold(const topo::Cluster& cluster, const topo::ServerOrbits& orbits, net::FlowNetwork& net,
                         Scratch& scratch, const topo::BlockRotation* rotation)
    : cluster_(cluster), orbits_(orbits), net_(net), scratch_(scratch), rotation_(rotation) {
  if (scratch_.mapped.size() != cluster.link_count() || ++scratch_.run == 0) {
    scratch_.mapped.assign(cluster.link_count(), 0);
    scratch_.mapped_run.assign(cluster.link_count(), 0);
    scratch_.own_run.assign(cluster.link_count(), 0);
    scratch_.own_root_run.assign(cluster.link_count(), 0);
    scratch_.entry.assign(cluster.link_count(), 0);
    scratch_.entry_route.assign(cluster.link_count(), 0);
    scratch_.run = 1;
    scratch_.route = 0;
  }
}

void NetworkFold::mark_broken() {
  if (broken_) return;
  broken_ = true;
  net_.simulator().stop();
}

void NetworkFold::label_dependent(std::span<const LinkId> path, FoldRole role) {
  if (role == FoldRole::kOwnLinks) return;
  if (!orbits_.twins_only()) {
    mark_broken();
    return;
  }
  for (const LinkId l : path) {
    if (l.value < cluster_.link_count() && orbits_.orbit_size(orbits_.orbit(l)) > 1) {
      mark_broken();
      return;
    }
  }
}

Bytes NetworkFold::Unfolded::share_of(Bytes carried) const {
  return Bytes{static_cast<std::int64_t>(static_cast<double>(carried.value()) * share + 0.5)};
}

LinkId NetworkFold::own(LinkId link) {
  if (link.value >= cluster_.link_count()) return link;  // a server's reduction engine: its own
  const LinkId root = orbits_.orbit(link);
  if (scratch_.mapped_run[root.value] == scratch_.run) mark_broken();  // another run maps onto its orbit
  scratch_.own_run[link.value] = scratch_.run;
  scratch_.own_root_run[root.value] = scratch_.run;
  return link;
}

NetworkFold::Unfolded NetworkFold::unfold(LinkId link, Bytes bytes) const {
  // A link a kOwnLinks run took (a virtual link, an NVLS reduction engine, has no stamp).
  if (link.value < scratch_.own_run.size() && scratch_.own_run[link.value] == scratch_.run) return Unfolded{{link}, bytes, 1.0};
  Unfolded u{orbits_.members(link), Bytes{0}};
  u.share = static_cast<double>(servers()) / static_cast<double>(u.links.size());
  u.bytes = u.share_of(bytes);
  return u;
}

LinkId NetworkFold::map_first(LinkId link) {
  if (link.value >= cluster_.link_count()) {  // a virtual link (an NVLS reduction engine)
    // Inside a server: the switch exchanges fix it (an orbit of one); a group of servers moves
    // it to another server's engine, which the quotient does not hold.
    if (!orbits_.twins_only()) mark_broken();
    return link;
  }
  const LinkId root = orbits_.orbit(link);
  if (scratch_.own_root_run[root.value] == scratch_.run) mark_broken();  // a kOwnLinks run's orbit
  if (scratch_.mapped_run[root.value] != scratch_.run) {  // the orbit's first use: its quotient capacity
    const std::size_t size = orbits_.orbit_size(root);
    if (size != orbits_.servers()) {  // else c |L| / N = c (every link of a twin fold's servers)
      const double capacity = net_.capacity(root).value() * static_cast<double>(size) / static_cast<double>(orbits_.servers());
      net_.set_capacity(root, Bandwidth{capacity});
    }
    scratch_.mapped_run[root.value] = scratch_.run;
    scratch_.mapped[root.value] = root.value;
  }
  scratch_.mapped_run[link.value] = scratch_.run;
  scratch_.mapped[link.value] = root.value;
  return root;
}

void NetworkFold::collapse(topo::WeightedRoute& route) {
  if (++scratch_.route == 0) {
    std::fill(scratch_.entry_route.begin(), scratch_.entry_route.end(), 0);
    scratch_.route = 1;
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < route.links.size(); ++i) {
    const auto [link, weight] = route.links[i];
    const LinkId root = map(link);
    if (root.value >= cluster_.link_count()) {  // not folded (map marked the fold broken): kept
      route.links[kept++] = {root, weight};
      continue;
    }
    if (scratch_.entry_route[root.value] != scratch_.route) {
      scratch_.entry_route[root.value] = scratch_.route;
      scratch_.entry[root.value] = static_cast<std::uint32_t>(kept);
      route.links[kept++] = {root, weight};
    } else {
      route.links[scratch_.entry[root.value]].second += weight;
    }
  }
  route.links.resize(kept);
  route.links.shrink_to_fit();  // a spread of thousands of links held as a few orbits
}

bool fabric_folds(const topo::Cluster& cluster) {
  if (cluster.routing() != topo::Routing::kAdaptive) return false;
  std::map<int, Duration> latency;
  for (std::uint32_t i = 0; i < cluster.link_count(); ++i) {
    const topo::LinkInfo& l = cluster.link(LinkId{i});
    if (cluster.node(l.src).server >= 0 || cluster.node(l.dst).server >= 0) continue;
    const auto [it, fresh] = latency.try_emplace(l.tier, l.latency);
    if (!fresh && it->second != l.latency) return false;
  }
  return true;
}

bool twin_foldable(const ScheduleContext& ctx, const Schedule& schedule) {
  for (const Round& round : schedule.rounds) {
    const bool nvls = round.latency == StepLatency::kNvls;
    for (const PlannedFlow& f : round.flows) {
      const std::int32_t from = ctx.server_of(f.src), to = ctx.server_of(f.dst);
      if (from < 0 || to < 0 || (nvls && from != to)) return false;
    }
  }
  return true;
}

bool rotation_maps(const Schedule& schedule, const topo::BlockRotation& rotation) {
  struct Key {
    std::uint32_t src, dst, channel;
    std::int32_t rail;
    bool handover;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const {
      return hash_combine(hash_combine(std::uint64_t{k.src} << 32 | k.dst, k.channel),
                          static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.rail)) << 1 | k.handover);
    }
  };
  std::unordered_map<Key, std::size_t, KeyHash> index;
  std::unordered_map<std::uint32_t, std::uint32_t> pipeline_image;
  for (const Round& round : schedule.rounds) {
    if (round.part_count > 0) return false;  // listed in parts: not read here
    index.clear();
    pipeline_image.clear();
    for (std::size_t i = 0; i < round.flows.size(); ++i) {
      const PlannedFlow& f = round.flows[i];
      if (f.reduction_port.valid()) return false;
      if (!index.try_emplace(Key{f.src.value, f.dst.value, f.channel, f.rail, f.handover}, i).second) return false;
    }
    for (const PlannedFlow& f : round.flows) {
      const Key image{rotation.image(f.src).value, rotation.image(f.dst).value, f.channel, f.rail, f.handover};
      const auto it = index.find(image);
      if (it == index.end()) return false;
      const PlannedFlow& g = round.flows[it->second];
      if (g.bytes != f.bytes || g.copies != f.copies || g.connections != f.connections) return false;
      if ((f.pipeline == kNoPipeline) != (g.pipeline == kNoPipeline)) return false;
      if (f.pipeline != kNoPipeline && pipeline_image.try_emplace(f.pipeline, g.pipeline).first->second != g.pipeline) return false;
    }
  }
  return true;
}

}  // namespace cs::coll
