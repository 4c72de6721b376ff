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
// among the widest links that stay on a shortest path, parallel links included; each hop takes
// the candidate with the largest hash_combine(h, vertex, candidate), so one pass over a
// vertex's links decides it. The middle is chosen in two steps (topology/rendezvous_hash.h):
// the candidates fall into classes of twin switches (the same links to the same devices: a
// leaf-spine's spines, the cores cabled to one aggregation index of every pod); a class is
// chosen by weighted rendezvous over each class's first candidate, weighing its candidates,
// then a member of it by rendezvous (under a second salt when the class was chosen among
// several). Every candidate is the middle for a share 1/(candidates) of the labels, as with one
// rendezvous over all of them, and a choice costs (classes + the class's members) hashes, not
// (candidates): 64 + 64 instead of 4,096 between pods of the radix-128 three-tier fat-tree.
// Where each class has one candidate, or one class holds them all, the two steps choose what a
// rendezvous over all candidates chooses. Different labels therefore spread
// the flows of one pair over all equal-cost spines, like a switch's 5-tuple ECMP hash.
//
// Cost: routes are computed on demand, never as an all-pairs table. One query runs a
// bidirectional breadth-first search (each round expands the smaller frontier by one full
// level), with visited marks stamped by a generation counter, so a query costs O(vertices and
// links visited), not O(V). Two searches give the same marks, hence the same routes (tested
// against each other, tests/topology/router_test.cpp, RouterCompressed):
//  - generic: over the cluster's adjacency arrays (Cluster::out_adjacency, in_adjacency) and the
//    line rate of each of their slots, copied once in the constructor (16 bytes per link). On
//    the radix-128 three-tier fat-tree a query between NICs of two pods scans over 16,000 links
//    (64 aggregation switches x 128 on each side) to meet at the 4,096 cores.
//  - compressed: the same rounds on a quotient built once in the constructor (O(links log
//    degree) time, about 70 bytes per vertex). Twin switches, with equal lists of (neighbour,
//    rate) in and out (the 64 cores cabled to one aggregation index of every pod, the spines of
//    a leaf-spine or rail-optimized fabric), are one class with one mark: a vertex outside a
//    class is equally far from all its members, over links of the same rates. Frontier sizes
//    count members. A row of 16 links or more becomes entries (far class, widest rate) split by
//    the far end's kind and interned as blocks shared by equal lists (a pod's leaves, in the row
//    of each of its aggregation switches); a round scans a block once however many frontier
//    classes hold it. Smaller rows are read from the adjacency arrays. The walk reads class
//    marks, and where the vertices one hop back are known to be one or a few (a level of at most
//    4 vertices, or the single class whose links reached the vertex's class), it compares ids
//    instead, and in a row of 16 links or more finds their links among the row's slots sorted by
//    far end (built with the quotient, 20 bytes per slot of such rows): where the row is at most
//    4 arithmetic runs of far ends (a spine's leaves; a leaf's NICs, then its spines), their
//    place is computed and one slot read (its link alone, 4 bytes, when the hop has a single
//    vertex and link to choose); otherwise by a search from an interpolated guess. A
//    hop at an aggregation switch or core of the radix-128 fat-tree reads a few slots, not 128.
//    The same fat-tree query scans a few hundred entries and hashes 128 candidates for the
//    middle (8 hashes at a time where the CPU has AVX-512, 4 with AVX2; a class of 64 cores
//    among 64). Queries from or to a member of a class of several switches take
//    the generic search; kAuto builds the quotient only where it halves the entries at rows of
//    16 links or more (fabrics of radix 16 and up, not rings, tori or single servers).
// Twin servers (topology/server_orbits.h, ServerTwins: servers cabled alike to the same outside
// devices, the servers of one leaf block): a compressed query between two servers' devices for a
// route not to be cached (Keep::kUnlessLabelled, a connection routed once; a cached route is
// walked once and searched as itself) is answered from the search of its canonical pair
// (ServerTwins::canonical: at most two exchanges of twin servers move src's server onto its
// class's first and dst's onto its class's first or second). Each exchange is an automorphism of the graph that fixes every device outside the
// two servers (the switches) and maps each moved device's links slot by slot, so the canonical
// pair's marks are the pair's own up to the exchanges: class for class (a class inside a server
// maps onto its image's), distances, widths and predecessors alike, the meeting classes the
// images of the pair's. The walk runs on the pair's own vertices, links and hashes (the middle
// hashed among the images of the canonical candidates, each hop's links read in the pair's own
// rows), reading the mark of a vertex's image and mapping the few vertices of a small level
// back: the pair's own route, link for link (tested pair by pair against searching each pair,
// tests/topology/router_test.cpp, RouterTwinServers). The last kSearches such searches are kept
// (least recently used replaced; about 40 bytes per class each, allocated on first use): an
// all-to-all's connections, asked for in rank order, come back to each rail's canonical pair
// every few queries, so on h100-rail-512 with 8,192 GPUs (32 leaf blocks) its 16.8 million
// connections take about one search per sending server, rail and class of receiving servers
// (262,144), not one each. Whether a pair's walk decides anything by its hash is the canonical
// pair's (the exchanges map ties onto ties) and the same for every label (the first tie is met by
// every label's walk): a route not to be cached (Keep::kUnlessLabelled) of such a pair is walked
// without the cache's lookups.
// Walks by middle: a kept search also keeps, per candidate middle (the widest classes'
// members), the path its second walk through that middle took (a search met once pays a flag,
// no more), in the canonical pair's coordinates: a link between switches as it is, a link with
// an end in a server as that end's row and slot, mapped back through the pair's exchanges. Not
// kept when a hop below the middle decided a tie by its hash, or when the path has a link
// between two servers. Each hop of a kept walk had one candidate, and the exchanges map
// candidates onto candidates slot by slot, so every later walk of the pair, or of a pair with
// the same canonical pair, through that middle takes the mapped path: its middle is hashed as
// before, then its links are read from the plan instead of walked (tested against the generic
// search, RouterTwinServers). On h100-rail-512 no hop below the spines ties between two NICs of
// one rail, and an all-to-all's parts listed by rail (sim/collectives/schedule.h,
// direct_in_parts) meet each canonical pair's 64 middles hundreds of times while its search is
// kept.
// Routes are cached by (src, dst, flow_label): about 50 bytes of table per route plus 4 bytes
// per link, in chunks that never move, so returned spans stay valid for the Router's lifetime.
// A pair whose path no label can change (no tie among the widest candidates, as inside a
// server) is cached once for all labels, so the cache grows with the distinct pairs, not with
// the flows.
//
// Failed links: a Router built with links down treats them as absent (their slots' rate 0,
// skipped by the search; the walk never prefers a rate-0 link over a live one on a shortest
// path). The cluster stays as it is; a simulation that fails a link builds a new Router.
//
// Limits: the Cluster must outlive the Router (it is immutable, so routes never go stale). Not
// thread-safe: a query mutates the scratch arrays and the cache.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/ids.h"
#include "topology/cluster.h"

namespace cs::topo {

struct ServerTwins;

class Router {
 public:
  // Which search answers queries (see "Cost"); every choice gives the same routes. kAuto: the
  // compressed search where the quotient halves the work at vertices of many links.
  enum class Search : std::uint8_t { kAuto, kGeneric, kCompressed };

  explicit Router(const Cluster& cluster, Search search = Search::kAuto);
  // A router of the cluster with `down` links failed: routes avoid them (a shortest path over
  // the links that are up, which may be longer than the cluster's). Takes the generic search.
  Router(const Cluster& cluster, std::span<const LinkId> down);
  ~Router();
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // The links of a shortest path (in hops) from src to dst, in order. Among equal-cost shortest
  // paths the choice is a deterministic function of (src, dst, flow_label). Computed on demand
  // and cached; the returned span stays valid for the Router's lifetime. src == dst gives an
  // empty span. No path: TopologyError naming both devices. `unique`, if given, is set to
  // unique_route(src, dst), found by the same lookup.
  // Keep::kUnlessLabelled: the same route, but one that depends on its label is not cached (a
  // connection of an all-to-all under static ECMP, routed once: thousands of servers' connections
  // would fill the cache with routes never asked for again); the span is then valid until the
  // next call. A label-free route is cached either way.
  enum class Keep : std::uint8_t { kAlways, kUnlessLabelled };
  std::span<const LinkId> route(NodeId src, NodeId dst, std::uint64_t flow_label = 0, bool* unique = nullptr,
                                Keep keep = Keep::kAlways);
  // A hint, no effect on any result: starts loading the cache slot where route(src, dst, ...)
  // first looks for a route of the pair that holds for every label (the cache's only entry for
  // most pairs). A caller that routes many pairs in a known order (a round's flows) hints a few
  // ahead, so that the lookup's cache miss (82% of route()'s samples in the 131,072-GPU `auto`,
  // docs/performance.md) overlaps the work before it.
  void prefetch(NodeId src, NodeId dst) const;
  // Length in hops of a shortest path from src to dst; 0 when src == dst; -1 if unreachable.
  int hops(NodeId src, NodeId dst);
  // Whether route(src, dst, label) is one path for every label (no tie among the widest
  // shortest candidates): then it is a function of the graph alone, which every automorphism
  // maps to the route between the images. Routes the pair (cached); no path: TopologyError.
  bool unique_route(NodeId src, NodeId dst);
  // Number of routes held in the cache.
  std::size_t cached_routes() const;
  // Whether queries between singleton classes take the compressed search.
  bool compressed() const { return compressed_; }
  // Where the twin servers come from (topology/server_orbits.h; "Twin servers" above): a source
  // shared with other users of the cluster, called once, on the first query that needs them.
  // Unset, the router builds its own then. kOff: every pair is searched as it is (tests compare
  // the two).
  enum class TwinServers : std::uint8_t { kUse, kOff };
  void set_server_twins_source(std::function<std::shared_ptr<const ServerTwins>()> source);
  void set_twin_servers(TwinServers use) { twin_servers_ = use; }
  // Compressed searches run so far (the others were found among the kept ones).
  std::uint64_t compressed_searches() const { return compressed_searches_; }
  // Walks read from a kept search's plan by middle (the others walked hop by hop).
  std::uint64_t planned_walks() const { return planned_walks_; }

 private:
  struct Slot;
  struct Mark;
  struct Searched;
  struct Exchange;

  // Both public constructors: rates with `down` at 0, twin classes over them, the quotient
  // unless `search` is kGeneric.
  Router(const Cluster& cluster, std::span<const LinkId> down, Search search);

  // Bidirectional BFS; returns the distance or -1, and leaves the middle-layer candidates in
  // meet_ and the distance marks of this generation in marks_ (generic) or, by class, in
  // `into` (compressed: its marks, levels and meeting classes).
  int search(std::uint32_t src, std::uint32_t dst);
  int search_compressed(std::uint32_t src, std::uint32_t dst, Searched& into);
  bool takes_compressed(std::uint32_t src, std::uint32_t dst) const;
  int distance(std::uint32_t src, std::uint32_t dst);  // the search the pair takes
  // The kept compressed search of (src, dst), run now unless one of searches_ holds it: a
  // canonical pair's among the last kSearches, a pair searched as itself in the first.
  Searched& searched(std::uint32_t src, std::uint32_t dst, bool canonical);
  // The exchanges of twin servers that move (src, dst) onto its canonical pair; none where the
  // pair is not between two servers' devices or twin servers are off.
  Exchange exchange_of(std::uint32_t src, std::uint32_t dst);
  void walk_path(std::uint32_t src, std::uint32_t dst, std::uint64_t hash);
  void walk_compressed(std::uint32_t src, std::uint32_t dst, std::uint64_t hash, Searched& found,
                       const Exchange& exchange);
  std::size_t middle_class(std::uint64_t meet_seed, std::uint64_t* member_seed) const;
  template <class MarkOf>
  void walk_hops(std::uint32_t src, std::uint32_t dst, std::uint32_t middle, std::uint64_t hash, std::uint32_t g,
                 const MarkOf& mark_of, const Searched* levels, const Exchange* exchange);
  void next_generation();
  void build_twins();
  void build_compressed(const Cluster& cluster, Search search);
  bool hop_tied_ = false;  // the last walk_hops decided a tie below the middle by its hash
  bool walk_branched_ = false;  // the last walk_path decided a tie by its hash
  // The pair of the last search that found a path, and its generation: route() walks again on
  // its marks for another label of the same pair.
  std::uint32_t searched_src_ = UINT32_MAX, searched_dst_ = UINT32_MAX, searched_gen_ = 0;
  static constexpr std::uint64_t kAnyLabel = UINT64_MAX;  // cache key of label-independent routes
  const LinkId* store(std::span<const LinkId> path);
  Slot* find_slot(std::uint32_t src, std::uint32_t dst, std::uint64_t label, std::uint64_t h);
  void grow_table();
  void check_node(NodeId id, const char* what) const;
  [[noreturn]] void no_path(NodeId src, NodeId dst) const;  // the TopologyError naming both

  const Cluster& cluster_;
  std::uint32_t vertex_count_ = 0;
  // The cluster's adjacency (see Adjacency): out-links of v are [out_begin_[v], out_begin_[v+1]).
  const std::uint32_t *out_begin_, *out_node_, *in_begin_, *in_node_;
  const LinkId *out_link_, *in_link_;
  std::vector<double> out_bw_, in_bw_;  // line rate of each adjacency slot; 0 for a link that is down
  bool links_down_ = false;             // some slot is 0: the search skips those

  // Scratch, allocated once.
  std::vector<Mark> marks_;
  std::uint32_t generation_ = 0;
  std::vector<std::uint32_t> front_fwd_, front_bwd_, next_, meet_;
  std::vector<LinkId> path_;

  // Twin classes (router.cpp, build_twins), in every Router: the middle's choice is by class.
  std::vector<std::uint32_t> class_of_;       // vertex -> class, | kTwins if it has several
  std::vector<std::uint32_t> class_begin_;    // members of class c: class_members_[begin[c], begin[c+1])
  std::vector<std::uint32_t> class_members_;  // ascending within a class
  // The compressed search's quotient (see "Cost"); empty unless compressed_.
  bool compressed_ = false;
  // Blocks of class c, out (toward dst) and in (toward src): *_blocks_[*_begin_[c], *_begin_[c+1]).
  std::vector<std::uint32_t> out_block_begin_, out_blocks_, in_block_begin_, in_blocks_;
  struct Entry {
    std::uint32_t cls, members;  // a far class and its number of vertices
    double bw;                   // the widest rate of the links to it
  };
  struct Block {
    std::uint32_t begin, end;  // entries_[begin, end)
    std::uint32_t round;       // the expansion round that last scanned it
    std::uint32_t holder;      // the class it was scanned for in that round
    std::uint32_t shared;      // the last round in which several frontier classes held it
  };
  std::vector<Entry> entries_;
  std::vector<Block> blocks_;
  std::uint32_t round_ = 0;
  // Each level of a compressed search (forward, backward) by depth (Searched::levels): its
  // vertices when there are at most 4 of them (src's NIC, its leaf and PCIe switch), else kLarge.
  struct SmallLevel {
    static constexpr std::uint32_t kLarge = UINT32_MAX;
    std::uint32_t size = 0;
    std::array<std::uint32_t, 4> vertex{};
    bool holds(std::uint32_t v) const {
      for (std::uint32_t i = 0; i < size; ++i) if (vertex[i] == v) return true;
      return false;
    }
  };
  // A link of a planned walk ("Walks by middle"), in the canonical pair's coordinates: the
  // slot-th link of `vertex`'s out-row (its in-row when slot has router.cpp's kInRow bit),
  // `vertex` a device of a server; or, vertex kPlanLink, the link `slot` itself (no end in a
  // server: the exchanges fix it). A path's steps end with vertex kPlanEnd.
  struct PlanStep {
    std::uint32_t vertex;
    std::uint32_t slot;
  };
  // The last few compressed searches (router.cpp, Router::searched), each with its marks by
  // class, its levels and its meeting classes: the least recently used is searched over.
  struct Searched {
    std::uint32_t src = UINT32_MAX, dst = UINT32_MAX;  // the pair searched; UINT32_MAX: none
    std::uint32_t gen = 0;                             // its generation, stamped on its marks
    std::uint64_t used = 0;                            // when last asked for
    int distance = -1;
    std::int8_t branched = -1;  // whether a walk on it branched (router.cpp, route); -1: none yet
    std::vector<Mark> marks;  // by class; sized on first use
    std::vector<SmallLevel> levels[2];
    std::vector<std::uint32_t> meet;
    // Its walks by middle (router.cpp, walk_compressed): per candidate middle (the widest
    // classes' members, in their order), the offset of its path's steps in plan_steps, or
    // whether it was walked not at all or once, or cannot be planned (a hop below the middle
    // decided a tie, or a link between two servers); planned at the second walk, emptied when
    // the pair is searched over.
    std::vector<std::uint32_t> plan_at;
    std::vector<PlanStep> plan_steps;
  };
  static constexpr std::size_t kSearches = 8;
  std::array<Searched, 1 + kSearches> searches_;
  std::uint64_t search_clock_ = 0, compressed_searches_ = 0, planned_walks_ = 0;
  TwinServers twin_servers_ = TwinServers::kUse;
  std::function<std::shared_ptr<const ServerTwins>()> server_twins_source_;
  std::shared_ptr<const ServerTwins> server_twins_;  // on the first pair that needs them
  // Each slot of a row of 16 links or more, with what the walk reads of it (router.cpp,
  // for_links_from): its far end, its place in the row, its link and its rate's rank among the
  // cluster's distinct rates (ordered as the rates: a slot's choice compares them as it would
  // the rates). 16 bytes, so a hop in a large row reads one entry where it read the slot's place,
  // far end, rate, link and far end again from five arrays, a cache miss each on a large cluster.
  // Vertex v's row: *_sorted_[*_sorted_at_[v].begin, *_sorted_at_[v + 1].begin), by far end,
  // then place. Built with the quotient.
  struct SortedSlot {
    std::uint32_t far, place, link, width;
  };
  // A run of a sorted row: far ends first, first + stride, ..., first + (count - 1) stride, each
  // with `copies` slots (parallel links), from the row's slot `begin` on. A row that is at most
  // kRowRuns such runs (a spine's leaves; a leaf's NICs, one per server, then its spines) has
  // them in *_runs_[*_sorted_at_[v].runs, *_sorted_at_[v + 1].runs): the walk then computes
  // where a far end's slots lie (for_links_from) instead of searching for them. Otherwise none.
  struct RowRun {
    std::uint32_t first, stride, begin, count, copies;
  };
  static constexpr std::size_t kRowRuns = 4;
  struct SortedAt {
    std::uint32_t begin = 0, runs = 0;
  };
  std::vector<SortedSlot> out_sorted_, in_sorted_;
  // Each slot's link again, 4 bytes a slot: a hop to a single vertex over a single link (a run's
  // far end with one copy) reads only that, a quarter of the slot's cache lines.
  std::vector<std::uint32_t> out_sorted_link_, in_sorted_link_;
  std::vector<RowRun> out_runs_, in_runs_;
  std::vector<SortedAt> out_sorted_at_, in_sorted_at_;
  // Scratch of the middle's choice: candidates (a class's first, or a class's members), the
  // classes' weights, and the generic walk's (class, vertex) candidates.
  std::vector<std::uint32_t> widest_, class_weight_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> by_class_;
  std::vector<std::uint32_t> shared_;  // scratch: blocks held by several classes in a round

  // Cache: open-addressing table of (src, dst, label) -> path in the arena.
  std::vector<Slot> slots_;
  std::size_t size_ = 0;
  std::vector<std::unique_ptr<LinkId[]>> chunks_;
  LinkId* chunk_free_ = nullptr;
  std::size_t chunk_left_ = 0;
};

}  // namespace cs::topo
