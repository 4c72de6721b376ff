#pragma once
// Sending servers' share of an all-pairs round (the direct algorithm: every rank sends the same
// bytes to every other rank) through the PXN relay (schedule.h, ProxyRelay), listed without
// merging their k x n flows one at a time.
//
// For one server and destinations in rank order, the result is ProxyRelay's, entry for entry:
// the same entries, in the same order, with the same copies, as adding the flows
// (ranks[t] -> ranks[j]) for each sender t in `senders`' order and each j != t in rank order to
// an empty ProxyRelay and taking its entries. For several servers the entries are each server's
// own (no entry merges flows of two servers: every source is on its sender's server, the sender
// or its proxy), listed by sender position, then by destination in the given order, then by
// server: each server's entries keep their own order when the destinations come in rank order.
// direct_in_parts (schedule.h) lists a part of several servers with the destinations by rail, so
// that the connections listed one after another go between the same NICs' rails (and classes of
// twin servers: the router's kept searches, topology/router.h, serve them in turn).
//
// Why it can be listed directly: the source a sender's flow to j leaves its server by (the sender,
// or its proxy on j's rail: ScheduleContext::nic_route) depends on j only through j's class,
// which is
//  - "same server": a flow inside the server, sent as it is;
//  - j's rail r, when j's server has rail r's NIC: the route's NICs and proxy depend on the
//    sender and r alone;
//  - "no rail" otherwise (no NIC route: sent as it is).
// So the sources are computed once per sender and class (k x (rails + 2) routes instead of
// k x n), and then, in the relay's order:
//  - the send (s -> j) opens an entry at the first sender whose flow to j leaves by s; its
//    copies are the senders whose flow to j leaves by s;
//  - a sender's handover (t -> p) opens an entry just before the first of its flows that p
//    sends; its copies are the destinations t reaches through p.
// Cost: per server one pass over the n ranks' classes, then one over its k x n pairs that reads
// a byte per pair (which entries open there), no hashing and no merging; memory
// O(n + k x rails) per server besides the entries.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/units.h"
#include "sim/collectives/schedule.h"

namespace cs::coll {

// What the listing reads of each rank, worked out once per schedule (rank_rails) for every
// sending server's listing: the rank's server (-1: none), and its rail when its server has that
// rail's NIC (-1 otherwise: no NIC route to it). 8 bytes a rank, read in order, where reading
// the cluster's records for every rank again for each of 2,048 sending servers was a cache miss
// or two per rank.
struct RankRails {
  std::vector<std::int32_t> server, rail;  // by rank index
};
RankRails rank_rails(const ScheduleContext& ctx, std::span<const topo::NodeId> ranks);

// Appends to `out` the relay's entries of the flows `bytes` from each rank ranks[t], t in one of
// `servers` (each a server's senders: rank indices, ascending, all on that server), to every
// other rank, in the order of the header: by sender position, destination (`destinations`, a
// permutation of the rank indices), server. `rails` is rank_rails(ctx, ranks).
void relay_server_pairs(const ScheduleContext& ctx, std::span<const topo::NodeId> ranks, const RankRails& rails,
                        std::span<const std::span<const std::size_t>> servers,
                        std::span<const std::uint32_t> destinations, Bytes bytes, std::vector<PlannedFlow>& out);

}  // namespace cs::coll
