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

void relay_server_pairs(const ScheduleContext& ctx, std::span<const NodeId> ranks, const RankRails& by_rank,
                        std::span<const std::size_t> senders, Bytes bytes, std::vector<PlannedFlow>& out) {
  const std::size_t n = ranks.size(), k = senders.size();
  if (k == 0) return;
  if (by_rank.server.size() != n || by_rank.rail.size() != n) {
    throw InternalError("relay_server_pairs: rails of other ranks");
  }
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
  const std::size_t no_rail = classes - 2, same = classes - 1;
  std::vector<std::uint16_t> class_of(n);
  std::vector<std::size_t> first_of(classes, SIZE_MAX);  // a destination of each class, the first
  std::vector<std::size_t> in_class(classes, 0);         // destinations of each class
  for (std::size_t j = 0; j < n; ++j) {
    const std::int32_t r = rail_of(j);
    const std::size_t c = r == kSame ? same : r == kNoRail ? no_rail : static_cast<std::size_t>(r);
    class_of[j] = static_cast<std::uint16_t>(c);
    if (first_of[c] == SIZE_MAX) first_of[c] = j;
    ++in_class[c];
  }

  // By sender t and class c (cell t * classes + c): the source its flows leave by, whether that
  // is a proxy (a handover first), and what opens there.
  struct Cell {
    NodeId source;
    bool proxied = false;
    bool opens_send = false;     // no earlier sender's flow to this class leaves by `source`
    std::uint32_t copies = 0;    // opens_send: the senders whose flows leave by `source`
  };
  std::vector<Cell> cells(k * classes);
  for (std::size_t c = 0; c < classes; ++c) {
    if (first_of[c] == SIZE_MAX) continue;
    for (std::size_t t = 0; t < k; ++t) {
      Cell& cell = cells[t * classes + c];
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
      while (cells[u * classes + c].source != cell.source) ++u;  // u == t at the latest
      cell.opens_send = u == t;
      ++cells[u * classes + c].copies;
    }
  }

  // Each sender's handovers: to each of its proxies (by first class), the destinations it reaches
  // through them; each class's index among them (kNone: not proxied).
  constexpr std::uint8_t kNone = UINT8_MAX;
  struct Handover {
    NodeId proxy;
    std::uint64_t copies = 0;
    bool listed = false;
  };
  std::vector<Handover> handovers;
  std::vector<std::uint8_t> handover_of(classes);
  for (std::size_t t = 0; t < k; ++t) {
    const NodeId sender = ranks[senders[t]];
    const Cell* row = cells.data() + t * classes;
    handovers.clear();
    for (std::size_t c = 0; c < classes; ++c) {
      handover_of[c] = kNone;
      if (!row[c].proxied) continue;
      std::size_t h = 0;
      while (h < handovers.size() && handovers[h].proxy != row[c].source) ++h;
      if (h == handovers.size()) {
        if (h == kNone) throw InternalError("relay_server_pairs: too many proxies");
        handovers.push_back(Handover{row[c].source});
      }
      handovers[h].copies += in_class[c];
      handover_of[c] = static_cast<std::uint8_t>(h);
    }
    for (const Handover& h : handovers) {
      if (h.copies > UINT32_MAX) throw InternalError("more than 2^32 identical flows in one round");
    }
    for (std::size_t j = 0; j < n; ++j) {
      if (j == senders[t]) continue;
      const std::size_t c = class_of[j];
      if (handover_of[c] != kNone && !handovers[handover_of[c]].listed) {
        Handover& h = handovers[handover_of[c]];
        h.listed = true;
        PlannedFlow handover{sender, h.proxy, bytes, 0, kNoPipeline};
        handover.copies = static_cast<std::uint32_t>(h.copies);
        handover.handover = true;
        out.push_back(handover);
      }
      if (!row[c].opens_send) continue;
      PlannedFlow send{row[c].source, ranks[j], bytes, 0, kNoPipeline};
      send.copies = row[c].copies;
      out.push_back(send);
    }
  }
}

}  // namespace cs::coll
