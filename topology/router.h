// Shortest-path routing with per-flow ECMP over the cluster graph.
//
// Model: a flow from device `src` to device `dst` follows one shortest path counted in hops
// (links traversed); latency does not weigh the choice. Among equal-hop candidates only the
// widest links are kept at each choice (a GPU-to-GPU path over NVSwitch beats a PCIe-switch
// detour of the same hop count, as NCCL prefers NVLink). Any device may forward
// traffic, GPUs included (NVLink to a peer GPU, then that GPU's NIC, as NCCL's PXN does).
// Among the equal-cost shortest paths the route is a pure function of (src, dst, flow_label):
// the hash h = hash_combine(mix64(src), dst, flow_label) picks the middle vertex of the path
// among the widest candidates at that distance, then each hop back toward src (and on toward dst)
// among the widest links that stay on a shortest path, parallel links included; each choice
// takes the candidate with the largest hash_combine(h, vertex, candidate), so one pass over a
// vertex's links decides it. Different labels therefore spread
// the flows of one pair over all equal-cost spines, like a switch's 5-tuple ECMP hash.
//
// Cost: routes are computed on demand, never as an all-pairs table. One query runs a
// bidirectional breadth-first search (each round expands the smaller frontier by one full
// level) over the cluster's adjacency arrays (Cluster::out_adjacency, in_adjacency) and the
// line rate of each of their slots, copied once in the constructor (16 bytes per link), with
// visited marks stamped by a generation counter, so a query costs O(vertices and links visited),
// not O(V). On a rail-optimized leaf-spine fabric that is a few hundred vertices per query. Routes are
// cached by (src, dst, flow_label): about 50 bytes of table per route plus 4 bytes per link,
// in chunks that never move, so returned spans stay valid for the Router's lifetime. A pair whose
// path no label can change (no tie among the widest candidates, as inside a server) is cached
// once for all labels, so the cache grows with the distinct pairs, not with the flows.
//
// Limits: the Cluster must outlive the Router (it is immutable, so routes never go stale). Not
// thread-safe: a query mutates the scratch arrays and the cache.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/ids.h"
#include "topology/cluster.h"

namespace cs::topo {

class Router {
 public:
  explicit Router(const Cluster& cluster);
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // The links of a shortest path (in hops) from src to dst, in order. Among equal-cost shortest
  // paths the choice is a deterministic function of (src, dst, flow_label). Computed on demand
  // and cached; the returned span stays valid for the Router's lifetime. src == dst gives an
  // empty span. No path: TopologyError naming both devices.
  std::span<const LinkId> route(NodeId src, NodeId dst, std::uint64_t flow_label = 0);
  // Length in hops of a shortest path from src to dst; 0 when src == dst; -1 if unreachable.
  int hops(NodeId src, NodeId dst);
  // Number of routes held in the cache.
  std::size_t cached_routes() const;

 private:
  struct Slot;
  struct Mark;

  // Bidirectional BFS; returns the distance or -1, and leaves the middle-layer candidates in
  // meet_ and the distance marks of this generation in marks_.
  int search(std::uint32_t src, std::uint32_t dst);
  void walk_path(std::uint32_t src, std::uint32_t dst, std::uint64_t hash);
  bool walk_branched_ = false;  // the last walk_path decided a tie by its hash
  // The pair of the last search that found a path, and its generation: route() walks again on
  // its marks for another label of the same pair.
  std::uint32_t searched_src_ = UINT32_MAX, searched_dst_ = UINT32_MAX, searched_gen_ = 0;
  static constexpr std::uint64_t kAnyLabel = UINT64_MAX;  // cache key of label-independent routes
  const LinkId* store(std::span<const LinkId> path);
  Slot* find_slot(std::uint32_t src, std::uint32_t dst, std::uint64_t label, std::uint64_t h);
  void grow_table();
  void check_node(NodeId id, const char* what) const;

  const Cluster& cluster_;
  std::uint32_t vertex_count_ = 0;
  // The cluster's adjacency (see Adjacency): out-links of v are [out_begin_[v], out_begin_[v+1]).
  const std::uint32_t *out_begin_, *out_node_, *in_begin_, *in_node_;
  const LinkId *out_link_, *in_link_;
  std::vector<double> out_bw_, in_bw_;  // line rate of each adjacency slot

  // Scratch, allocated once.
  std::vector<Mark> marks_;
  std::uint32_t generation_ = 0;
  std::vector<std::uint32_t> front_fwd_, front_bwd_, next_, meet_;
  std::vector<LinkId> path_;

  // Cache: open-addressing table of (src, dst, label) -> path in the arena.
  std::vector<Slot> slots_;
  std::size_t size_ = 0;
  std::vector<std::unique_ptr<LinkId[]>> chunks_;
  LinkId* chunk_free_ = nullptr;
  std::size_t chunk_left_ = 0;
};

}  // namespace cs::topo
