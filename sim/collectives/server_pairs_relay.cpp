#include "sim/collectives/server_pairs_relay.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/errors.h"

namespace cs::coll {

using topo::NodeId;

RankRails rank_rails(const ScheduleContext& ctx, std::span<const NodeId> ranks) {
  const topo::Cluster& cluster = ctx.cluster();
  RankRails out;
  out.server.resize(ranks.size());
  out.rail.resize(ranks.size(), -1);
  for (std::size_t j = 0; j < ranks.size(); ++j) {
    const std::int32_t s = cluster.node(ranks[j]).server;
    out.server[j] = s;
    if (s < 0) continue;
    const std::int32_t r = ctx.rail_of(ranks[j]);
    if (r >= 0 && ctx.rail_nic(s, r).valid()) out.rail[j] = r;
  }
  return out;
}

namespace {

constexpr std::uint8_t kNoHandover = UINT8_MAX;

// One sending server's state (the header): each destination's class, by sender and class the
// source its flows leave by and what opens there, and by sender its handovers.
struct ServerListing {
  struct Cell {
    NodeId source;
    bool proxied = false;
    bool opens_send = false;   // no earlier sender's flow to this class leaves by `source`
    std::uint32_t copies = 0;  // opens_send: the senders whose flows leave by `source`
  };
  struct Handover {
    NodeId proxy;
    std::uint64_t copies = 0;
    bool listed = false;
  };
  std::span<const std::size_t> senders;
  std::size_t classes = 0;
  std::vector<std::uint16_t> class_of;              // by destination
  std::vector<Cell> cells;                          // sender t, class c: t * classes + c
  std::vector<std::uint8_t> handover_of;            // sender t, class c: its handover's index
  std::vector<std::vector<Handover>> handovers;     // by sender, to each of its proxies
};

ServerListing list_server(const ScheduleContext& ctx, std::span<const NodeId> ranks, const RankRails& by_rank,
                          std::span<const std::size_t> senders) {
  const std::size_t n = ranks.size(), k = senders.size();
  ServerListing s;
  s.senders = senders;
  const std::int32_t server = by_rank.server[senders[0]];
  for (const std::size_t t : senders) {
    if (t >= n || by_rank.server[t] != server) throw InternalError("relay_server_pairs: senders of several servers");
  }
  // Each destination's class (server_pairs_relay.h): its rail r, numbered r; no rail, numbered
  // rails; the senders' own server, numbered rails + 1 (rails: one more than the largest rail).
  constexpr std::int32_t kNoRail = -1, kSame = -2;
  std::int32_t rails = 0;
  const auto rail_of = [&](std::size_t j) { return by_rank.server[j] == server ? kSame : by_rank.rail[j]; };
  for (std::size_t j = 0; j < n; ++j) rails = std::max(rails, rail_of(j) + 1);
  const auto classes = static_cast<std::size_t>(rails) + 2;
  if (classes > std::numeric_limits<std::uint16_t>::max()) throw InternalError("relay_server_pairs: too many rails");
  s.classes = classes;
  const std::size_t no_rail = classes - 2, same = classes - 1;
  s.class_of.resize(n);
  std::vector<std::size_t> first_of(classes, SIZE_MAX);  // a destination of each class, the first
  std::vector<std::size_t> in_class(classes, 0);         // destinations of each class
  for (std::size_t j = 0; j < n; ++j) {
    const std::int32_t r = rail_of(j);
    const std::size_t c = r == kSame ? same : r == kNoRail ? no_rail : static_cast<std::size_t>(r);
    s.class_of[j] = static_cast<std::uint16_t>(c);
    if (first_of[c] == SIZE_MAX) first_of[c] = j;
    ++in_class[c];
  }

  // By sender t and class c (cell t * classes + c): the source its flows leave by, whether that
  // is a proxy (a handover first), and what opens there.
  s.cells.resize(k * classes);
  for (std::size_t c = 0; c < classes; ++c) {
    if (first_of[c] == SIZE_MAX) continue;
    for (std::size_t t = 0; t < k; ++t) {
      ServerListing::Cell& cell = s.cells[t * classes + c];
      cell.source = ranks[senders[t]];
      if (c < no_rail) {
        const auto nic = ctx.nic_route(ranks[senders[t]], ranks[first_of[c]], PlannedFlow::kDestinationRail);
        if (nic && nic->send_proxy.valid()) {
          cell.source = nic->send_proxy;
          cell.proxied = true;
        }
      }
      if (c == same) {  // distinct senders: each flow its own entry
        cell.opens_send = true;
        cell.copies = 1;
        continue;
      }
      std::size_t u = 0;
      while (s.cells[u * classes + c].source != cell.source) ++u;  // u == t at the latest
      cell.opens_send = u == t;
      ++s.cells[u * classes + c].copies;
    }
  }

  // Each sender's handovers: to each of its proxies (by first class), the destinations it reaches
  // through them; each class's index among them (kNoHandover: not proxied).
  s.handover_of.assign(k * classes, kNoHandover);
  s.handovers.resize(k);
  for (std::size_t t = 0; t < k; ++t) {
    const ServerListing::Cell* row = s.cells.data() + t * classes;
    std::vector<ServerListing::Handover>& handovers = s.handovers[t];
    for (std::size_t c = 0; c < classes; ++c) {
      if (!row[c].proxied) continue;
      std::size_t h = 0;
      while (h < handovers.size() && handovers[h].proxy != row[c].source) ++h;
      if (h == handovers.size()) {
        if (h == kNoHandover) throw InternalError("relay_server_pairs: too many proxies");
        handovers.push_back(ServerListing::Handover{row[c].source});
      }
      handovers[h].copies += in_class[c];
      s.handover_of[t * classes + c] = static_cast<std::uint8_t>(h);
    }
    for (const ServerListing::Handover& h : handovers) {
      if (h.copies > UINT32_MAX) throw InternalError("more than 2^32 identical flows in one round");
    }
  }
  return s;
}

}  // namespace

void relay_server_pairs(const ScheduleContext& ctx, std::span<const NodeId> ranks, const RankRails& by_rank,
                        std::span<const std::span<const std::size_t>> servers, std::span<const std::uint32_t> destinations,
                        Bytes bytes, std::vector<PlannedFlow>& out) {
  const std::size_t n = ranks.size();
  if (by_rank.server.size() != n || by_rank.rail.size() != n) {
    throw InternalError("relay_server_pairs: rails of other ranks");
  }
  if (destinations.size() != n) throw InternalError("relay_server_pairs: a destination order of other ranks");
  std::vector<ServerListing> listings;
  listings.reserve(servers.size());
  std::size_t most = 0;  // senders of the largest server
  for (const std::span<const std::size_t> senders : servers) {
    if (senders.empty()) continue;
    listings.push_back(list_server(ctx, ranks, by_rank, senders));
    most = std::max(most, senders.size());
  }
  for (const std::uint32_t j : destinations) {
    if (j >= n) throw InternalError("relay_server_pairs: a destination out of range");
  }
  // By sender position, then destination, then server (the header).
  for (std::size_t t = 0; t < most; ++t) {
    for (const std::uint32_t j : destinations) {
      for (ServerListing& s : listings) {
        if (t >= s.senders.size() || j == s.senders[t]) continue;
        const NodeId sender = ranks[s.senders[t]];
        const std::size_t c = s.class_of[j];
        if (const std::uint8_t h = s.handover_of[t * s.classes + c]; h != kNoHandover && !s.handovers[t][h].listed) {
          ServerListing::Handover& handover = s.handovers[t][h];
          handover.listed = true;
          PlannedFlow entry{sender, handover.proxy, bytes, 0, kNoPipeline};
          entry.copies = static_cast<std::uint32_t>(handover.copies);
          entry.handover = true;
          out.push_back(entry);
        }
        const ServerListing::Cell& cell = s.cells[t * s.classes + c];
        if (!cell.opens_send) continue;
        PlannedFlow send{cell.source, ranks[j], bytes, 0, kNoPipeline};
        send.copies = cell.copies;
        out.push_back(send);
      }
    }
  }
}

}  // namespace cs::coll
