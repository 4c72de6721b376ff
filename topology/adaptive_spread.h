// Adaptive routing as a fluid model: how a flow's bytes spread over the equal-cost shortest paths
// of a fabric whose switches balance per packet (InfiniBand adaptive routing, Spectrum-X), as
// opposed to static ECMP, where a flow label hashes the whole flow onto one path (topo::Router).
// Which of the two a fabric has is Cluster::routing() (docs/network-model.md, "Routing: static
// ECMP and adaptive routing").
//
// Model. The shortest-path DAG from src to dst holds the links (u, v) with
// d(src, u) + 1 + d(v, dst) = d(src, dst), hops counted as the router counts them. Every vertex
// forwards what reaches it evenly over its next hops in the DAG; among them only the widest links
// (largest line rate), as the router's ECMP keeps only the widest candidates. With x_src = 1,
//
//     share(v -> u) = x_v / n_v,      x_u = sum over DAG links (v -> u) of share(v -> u),
//
// n_v the number of widest DAG out-links of v (parallel cables count one each). So the shares of
// the links leaving any cut between src and dst add to 1 (flow conservation), and every link of
// the DAG carries an exact rational share of the flow. A two-tier leaf-spine with S spines:
// NIC->leaf 1, each leaf->spine 1/S, each spine->leaf 1/S, leaf->NIC 1. A three-tier k-ary
// fat-tree between pods: leaf->agg 2/k, agg->core and core->agg 4/k^2, agg->leaf 2/k.
//
// Assumptions: the switches balance perfectly per packet and locally (each splits what it
// receives evenly, whatever happens downstream; no global optimisation); packets arrive out of
// order at no cost (the NIC reorders); the split does not react to load (the fluid model of an
// idle fabric's AR; congestion-aware AR that shifts load away from hot links is not modelled).
// Only shortest paths are used, as AR restricted to minimal routes does.
//
// Representation. Shares are returned as integer weights over a common denominator K (`scale`):
// share(l) = weight(l) / K, K the lcm of the shares' reduced denominators, computed exactly with
// gcd and lcm in 64-bit integers. K is capped at kMaxSpreadScale (2^20): a DAG whose exact K would
// exceed it (long paths with uneven fan-outs, such as a large torus) falls back to K =
// kMaxSpreadScale with every weight rounded up, ceil(share x K), so a link's load is overestimated
// by less than 1/K of the flow's rate and never underestimated; `exact` is then false.
//
// Like the router, the spread counts hops through every device, hosts' NICs and PCIe switches
// included: between two NICs of one server's PCIe switch the shortest path stays in the server,
// and between NICs of different rails a path through a third server's NICs can tie with the
// fabric's. Between NICs of one rail (the only NIC pairs NCCL's net transport connects, see
// docs/network-model.md, "Across servers") the shortest paths are the fabric's.
//
// Difference from the router: the router picks the middle vertex of a path first and keeps the
// widest links walking out from it; the spread keeps the widest links walking forward from src.
// On fabrics whose tiers have uniform link rates (every bundled one) the two agree on which links
// are candidates.
//
// Cost: one query is a bidirectional breadth-first search over the vertices and links near src
// and dst (as the router's: O(vertices and links visited), with generation-stamped marks, no
// O(V) clearing), then one pass over the DAG's links with a gcd each: O(links of the DAG x
// log K). Finding the DAG's layers and links scans, at each step, the smaller of two sides: the
// links of the layer at hand, or those of the search level the next layer lies in (a spine's
// in-links grow with the leaves, 512 at 16,384 GPUs, while the source leaf's uplinks stay 64);
// layers are sorted by vertex id and a layer's links by (source id, link id), so the route is
// the same whichever side was scanned; it lists its links in id order. AdaptiveSpreader caches the result per (src, dst): 8 bytes per DAG link plus the map
// entry (a two-tier leaf-spine route holds 2S + 2 links). Measured (one core, -O2, 20,000 NIC
// pairs of rail 0): a first query costs 23 us on h100-rail-512 (130 links), 30 us on the
// a100-superpod fat-tree (up to 842 links), 1.3 us on leafspine-oversub; the router's route
// 0.9, 2.8 and 0.3 us. A cached pair is one hash lookup.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/ids.h"
#include "topology/cluster.h"
#include "topology/server_orbits.h"
#include "topology/weighted_route.h"

namespace cs::topo {

// The quotient of a cluster's graph by its twin switches (SwitchTwins) that AdaptiveSpreader
// searches and splits over (see its constructor): one row per vertex that is no twin or the first
// of its class, grouped by (far end's class, orbit of the link). A function of the cluster and
// the classes alone, so many spreaders share one (coll::NetworkLayout::twin_quotient): a
// training iteration simulates dozens of collectives, each with a spreader of its own.
struct TwinQuotient {
  std::shared_ptr<const SwitchTwins> twins;
  Adjacency out, in;                       // in: out transposed, the same entries
  std::vector<std::uint32_t> multiplicity;  // per link: its group's links (0: no group's first)
  std::vector<std::uint32_t> class_size;    // per device: the vertices of its twin class
};
// O(devices + links x group entries per row). The twins must be the cluster's.
std::shared_ptr<const TwinQuotient> twin_quotient(const Cluster& cluster, std::shared_ptr<const SwitchTwins> twins);

// Per server: the one switch every link leaving it goes to (out) and the one every link entering
// it comes from (in); kNone where there is none or several. O(links).
struct ServerLeaves {
  static constexpr std::uint32_t kNone = UINT32_MAX;
  std::vector<std::uint32_t> out, in;
};
ServerLeaves server_leaves(const Cluster& cluster);

// The classes of switches of like neighbours (AdaptiveSpreader, "Switches of like neighbours"):
// per device, the first switch of its class (kNone: no switch, or a class of one) and, for a
// class's first, its second; per switch of a class its row, (neighbour, link to it, link from
// it) by neighbour id, outside its own servers (rows[begin[v], begin[v + 1])); and the servers'
// leaves the classes are built from, which AdaptiveSpreader::leaf_pair reads too. A function of
// the cluster alone, so the spreaders of many collectives share one (coll::NetworkLayout).
struct LikeSwitches {
  static constexpr std::uint32_t kNone = UINT32_MAX;
  struct Neighbour {
    std::uint32_t node;
    LinkId out, in;
  };
  std::vector<std::uint32_t> first, second, begin;
  std::vector<Neighbour> rows;
  ServerLeaves leaves;  // server_leaves(cluster), which the classes are built from
};
// O(links + switches' rows x log).
std::shared_ptr<const LikeSwitches> like_switches(const Cluster& cluster);

// The adaptive-routing spread of flows from src to dst, cached per pair. The Cluster must outlive
// the spreader. Not thread-safe.
class AdaptiveSpreader {
 public:
  explicit AdaptiveSpreader(const Cluster& cluster);
  // Spreads on the quotient of twin switches (topology/server_orbits.h, SwitchTwins: the
  // switch exchanges fix src and dst, so they map the DAG and its shares onto themselves). The
  // search and the shares run over one vertex per class of twins, whose share is the class's
  // total, and over one entry per (vertex, far class, orbit of links) with its multiplicity m;
  // each returned link stands for its orbit's links from that vertex or class, with their total
  // weight: x_v m / n_v. Summing a returned route's weights by orbit (NetworkFold::collapse)
  // gives what summing the full spread's gives, exactly, in O(classes) instead of O(links):
  // between pods of the radix-128 three-tier fat-tree 258 entries instead of 8,322. A pair with
  // an end in a class of several twins takes the full spread. For a folded run only: the
  // routes are not the per-link spread.
  AdaptiveSpreader(const Cluster& cluster, std::shared_ptr<const SwitchTwins> twins);
  // The same on a quotient built before (twin_quotient), shared with other spreaders.
  AdaptiveSpreader(const Cluster& cluster, std::shared_ptr<const TwinQuotient> quotient);
  ~AdaptiveSpreader();
  AdaptiveSpreader(const AdaptiveSpreader&) = delete;
  AdaptiveSpreader& operator=(const AdaptiveSpreader&) = delete;

  // The spread of a flow from src to dst (see the header): an empty route (scale 1) when
  // src == dst; no path: TopologyError naming both devices. The reference stays valid for the
  // spreader's lifetime.
  //
  // Twin servers (topology/server_orbits.h, ServerTwins): a pair whose ends lie in servers with
  // twins is first moved by at most two exchanges of twin servers, onto its canonical pair: src
  // into the first server of its class, dst into the first of its class other than src's
  // server (the second when src's class is dst's). An exchange is an automorphism, so the spread
  // of (src, dst) is the canonical pair's with every link mapped back through the exchanges:
  // the same links and weights, the same K, as computing it (tested on every NIC pair of the
  // bundled fabrics). One search and split per canonical pair instead of per pair of NICs: on
  // the three-tier fat-tree the 131,072-GPU tree's pairs fall on 98,208 canonical pairs (2,048
  // classes of 8 servers; every NIC of a server is on its class's leaf, so the NIC's index
  // splits each of the 12,276 leaf pairs 8 ways; below, they take one search per leaf pair
  // instead). Only exact spreads are mapped (the rounded fallback sums doubles in vertex order)
  // and compute()'s routes list their links in id order, so the mapped route, sorted, is the
  // computed one.
  const WeightedRoute& spread(NodeId src, NodeId dst);
  //
  // Servers of one leaf: a pair between two servers A and B, where every link from A to a device
  // outside it goes to one switch L1, every link into B from outside comes from one switch L2,
  // src has exactly one link to L1 and dst exactly one from L2, takes the spread of (L1, L2)
  // with those two links added, each carrying the whole flow. Exact: every path from src leaves
  // A through L1 (A's only exit) and enters B through L2 (B's only entry); the one link is the
  // only way from src to L1 in one hop (any other reaches L1 after two or more), and likewise
  // from L2 to dst. So every shortest path is src -> L1, a shortest path from L1 to L2 (which
  // never enters A or B: it would have to come back out through L1, or pass L2 before its
  // end), then L2 -> dst, and each vertex of the middle receives
  // and splits the same share as in the spread of (L1, L2). Taken when that spread is exact and
  // on the same graph (the twin quotient for both pairs or neither), so the links, weights and K
  // are those of the pair's own search (tested on every NIC pair of the bundled fabrics). One
  // search per pair of leaves: where a server's NICs share a leaf (h100-fat-tree-3tier), the
  // 131,072-GPU tree's 98,208 canonical pairs are 12,276 leaf pairs.
  //
  // Switches of like neighbours: two switches u and u' whose neighbours outside their servers
  // are the same switches, with exactly one link to and one from each of the same bandwidths,
  // and whose other neighbours are devices of servers that u (u') is the only way into and out of
  // (the leaves of one pod of a fat-tree: the same aggregation switches above, servers of their
  // own below), have the same spread to any switch t outside {u, u'} but for its first links:
  // d(u, x) = d(u', x) for every x outside them and their servers, since a shortest path never
  // enters such a server (it would leave through the switch it came from), so the DAG from u' to
  // t is u' -> the same next hops, each with the same share (same widest links), then the same
  // DAG (which never returns to u or u': their distance to t is the start's). Likewise into t
  // with its last links. So a pair of switches (u, t) takes the spread of (u', t'), u' and t' the
  // first switches of their classes (by id), with each link out of u' replaced by u's to the same
  // neighbour and each link into t' by the one into t from the same neighbour (u and t of one
  // class: (u', t') its first two, or its second and first when t is the first). Taken when the
  // canonical pair's spread is exact, on the same graph (the twin quotient for both or neither),
  // and u' differs from t and t' (else: the pair's own search; also when a link joins u' to t'
  // directly). On the 131,072-GPU three-tier fabric the 12,276 pairs of leaves the tree asks for
  // take 182 searches (about 435,000 instructions each, against about 21,000 for a pass over a
  // derived pair's 258 links).
  //
  // Such a pair, as its parts (leaf_pair): a caller that sums many pairs' loads (a pipeline's
  // members) adds each pair of leaves' middle once, times its pairs, and each pair's two links.
  struct LeafPair {
    NodeId from, to;   // the leaves L1 and L2: spread(from, to) is the middle
    LinkId first, last;  // src -> L1 and L2 -> dst, each carrying the whole flow
  };
  // The parts of a pair that spread() builds from its servers' leaves; nullopt for any other
  // pair (and with derive_from_twin_servers(false)). Searches the middle if not cached.
  std::optional<LeafPair> leaf_pair(NodeId src, NodeId dst);
  // Such a pair's route, as spread() returns it, written into `out` (not cached): the middle
  // with the two links merged in at their ids, each of weight K.
  void leaf_route(const LeafPair& pair, WeightedRoute& out);
  // Every pair computed by its own search (for tests that compare the two).
  void derive_from_twin_servers(bool on) { derive_ = on; }
  // Where the twin servers come from, asked on the first pair between servers: by default a
  // ServerSymmetry of the spreader's own (O(devices)); an owner of many spreaders over one
  // cluster (coll::NetworkLayout, one per collective simulated) hands out classes built once.
  void set_server_twins_source(std::function<std::shared_ptr<const ServerTwins>()> source) {
    server_twins_source_ = std::move(source);
  }
  // Likewise the classes of switches of like neighbours (like_switches(), O(links)).
  void set_like_switches_source(std::function<std::shared_ptr<const LikeSwitches>()> source) {
    like_switches_source_ = std::move(source);
  }
  // The routes mapped from a canonical pair's, or built from their leaves', so far.
  std::size_t derived_routes() const { return derived_; }
  std::size_t cached_routes() const { return searched_.routes.size() + derived_cache_.routes.size(); }
  // Links held by the cached routes (8 bytes each). A cache of every NIC pair of one rail grows
  // with servers^2 x rails: on h100-rail-512 (64 spines, 130 links a route) an all-to-all of
  // all 4,096 GPUs would hold 2 million routes, about 2 GiB; an owner that runs such traffic
  // bounds it with trim() or clear().
  std::size_t cached_links() const { return searched_.links + derived_cache_.links; }
  // Keeps the cache within max_links: when it holds more, forgets the routes derived from
  // others' (mapped from a canonical pair's, built from a leaf pair's), then, if the searched
  // ones alone still hold more, these too. References returned by spread() may be invalidated.
  // The searched go last since each cost a search and the others a pass over their links: the
  // 131,072-GPU tree derives 524,244 routes of up to 258 links from 12,276 searched ones.
  void trim(std::size_t max_links);
  // Forgets every cached route: references returned by spread() are invalidated.
  void clear();

 private:
  struct Mark;
  // Throws InternalError naming a device outside the cluster.
  void check_nodes(NodeId src, NodeId dst) const;
  int search(std::uint32_t src, std::uint32_t dst);
  // The spread over the DAG of the last search (distance d(src, dst) > 0).
  WeightedRoute compute(std::uint32_t src, int distance);
  // Whether spread(a, b) runs on the twin quotient.
  bool on_quotient(std::uint32_t a, std::uint32_t b) const {
    return quotient_ && quotient_->class_size[a] == 1 && quotient_->class_size[b] == 1;
  }

  const Cluster& cluster_;
  // The adjacency the last search ran on (the cluster's, or the twin quotient's), the quotient's
  // far-end map (null: the cluster's) and its multiplicity per representative link.
  const Adjacency* out_;
  const Adjacency* in_;
  const std::uint32_t* rep_ = nullptr;
  std::shared_ptr<const TwinQuotient> quotient_;  // null: the full graph only
  std::vector<Mark> marks_;  // per device, sized by the first search
  std::uint32_t generation_ = 0;
  std::vector<std::uint32_t> front_[2], next_, meet_;
  std::vector<std::vector<std::uint32_t>> layers_;
  std::vector<std::vector<std::uint32_t>> levels_[2];  // the search's levels per side, by distance
  std::vector<std::pair<std::uint32_t, std::uint32_t>> dag_links_;  // compute's scratch
  std::vector<std::pair<LinkId, std::uint32_t>> moved_;  // spread's scratch: a derived route's moved links
  // A server with no leaf of its own in LikeSwitches::leaves (none, or several).
  static constexpr std::uint32_t kNoLeaf = ServerLeaves::kNone;
  // Merges moved_ (sorted here) into `route`'s links, which hold the links that did not move, in
  // id order: the route of a derived pair, in id order.
  void merge_moved(WeightedRoute& route);
  // Switches of like neighbours (the header), asked for on the first pair of switches.
  std::shared_ptr<const LikeSwitches> like_;
  std::function<std::shared_ptr<const LikeSwitches>()> like_switches_source_;  // empty: build own
  // The spread of switches (src, dst) from the canonical pair's (the header), or false.
  bool derive_from_like_switches(std::uint32_t src, std::uint32_t dst, WeightedRoute& route);
  // The classes of switches of like neighbours, from the source when one is set (built once).
  const LikeSwitches& like();
  // The twin servers (built on the first pair between servers), and whether to use them.
  std::shared_ptr<const ServerTwins> servers_;
  std::function<std::shared_ptr<const ServerTwins>()> server_twins_source_;  // empty: build own
  bool derive_ = true;
  std::size_t derived_ = 0;
  // The routes cached per (src, dst), key src << 32 | dst, never iterated: those a search
  // computed and those derived from them, apart so that trim() can keep the first.
  struct Cache {
    std::unordered_map<std::uint64_t, WeightedRoute> routes;
    std::size_t links = 0;
    const WeightedRoute& put(std::uint64_t key, WeightedRoute route) {
      links += route.links.size();
      return routes.emplace(key, std::move(route)).first->second;
    }
    void clear() {
      routes.clear();
      links = 0;
    }
  };
  Cache searched_, derived_cache_;
};

// The mean latency of a flow's packets over a spread: sum over its links of share x latency,
// since a packet crosses link l with probability share(l) (a unit flow's shares); the latency of
// every shortest path when they all have one (one latency per fabric tier). On the quotient of
// twin switches too (twins' links have one latency). Rounded to the nearest picosecond (exact
// while sum of weight x latency stays below 2^53: K L with K <= 2^20 and L below 8 ms).
Duration mean_latency(const Cluster& cluster, const WeightedRoute& route);
// Its numerator: the sum over the route's links of weight x latency in picoseconds, an integer
// held exactly in a double below 2^53, so a caller may add other links' to it (the same links
// listed elsewhere) and divide once, as mean_latency does.
double weighted_latency_ps(const Cluster& cluster, const WeightedRoute& route);

// One query without a cache (allocates O(vertices) of marks): AdaptiveSpreader for many.
WeightedRoute adaptive_spread(const Cluster& cluster, NodeId src, NodeId dst);

}  // namespace cs::topo
