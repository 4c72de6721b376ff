// Symmetric servers: a group of automorphisms of the cluster graph that permutes a set of servers
// transitively, and the orbits of the links under it. A collective whose flows that group maps
// onto themselves (an all-to-all over whole servers, under a routing every automorphism
// preserves) runs as the flows of one server on the quotient network
// (sim/collectives/network_fold.h; docs/network-model.md, "Folding symmetric collectives").
//
// The group. Let R be the servers holding a set of GPUs, each at the same positions (k-th device
// of its server, devices in NodeId order), s0 the first. Three kinds of generators, each an
// involution of the devices, checked to be an automorphism:
//   twin exchange   s0 <-> s (device by device) for every other server s of R whose links to
//                   devices outside it are s0's (the servers of one leaf block);
//   block exchange  the block of s0 <-> another block of R, where a block is a server's twins
//                   (found through the outside devices they are cabled to): the k-th server of
//                   one <-> the k-th of the other, device by device, closed over the links: the
//                   k-th link of a moved device and the k-th link of its image (adjacency order)
//                   make their far ends images of each other, until the rows meet devices that
//                   map to themselves. On a two-tier fabric that exchanges the blocks' leaves
//                   (the spines fixed); on a three-tier fat-tree, blocks of different pods
//                   exchange the two pods (leaves, aggregation switches, servers; the cores
//                   fixed). A block is exchanged with s0's only while no earlier generator
//                   joined it to s0, so the generators move O(devices) in all, and each must map
//                   R's GPUs onto themselves;
//   switch exchange two twin switches outside servers (SwitchTwins below: a two-tier fabric's
//                   spines), which fix every GPU; their link classes are computed once per
//                   cluster and the other generators unite classes, not links.
// The check: every moved device x and its image y have the same kind, model, reduction
// bandwidth and packet efficiency, and the multiset of (image of the far end, bandwidth,
// latency, link class, tier) over x's out-links equals that of (far end, ...) over y's
// out-links, and the same for in-links. Then every link with a moved end maps onto a link with
// the same attributes and the others are fixed: the involution is an automorphism, mapping R's
// GPUs onto themselves. The generated group maps s0 to every server of R (a twin exchange within
// the block of s0; a block exchange, then its conjugates), and its link orbits are the connected
// components of "l ~ image of l" over the generators (union-find).
//
// What the caller gets: for any link, its orbit's representative (a link of the orbit; a link no
// generator moves is its own orbit of one) and the orbit's links. Nothing when R has one server,
// its servers differ in size or in which positions hold the GPUs, blocks differ in size, a block
// is only partly in R while R spans several blocks, a generator needs two images for one device,
// maps a GPU of R outside R, or is not an automorphism, or the group is not transitive on R.
// Cost: O(links of the devices the generators move), at most those of R's servers, the switches
// above them up to the fixed ones, and (three tiers) the rest of their pods; never the whole
// cluster for a few servers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/ids.h"
#include "topology/cluster.h"

namespace cs::topo {

// Twin switches (outside servers, with the same links to the same devices: a two-tier fabric's
// spines, the cores cabled to one aggregation index of every pod) exchanged pairwise, each
// exchange checked to be an automorphism: the link classes they make, the same for every set of
// ranks, computed once per cluster. O(fabric links) time and O(links) memory.
struct SwitchTwins {
  std::vector<std::uint32_t> rep;                                   // per link: its class's smallest link
  std::unordered_map<std::uint32_t, std::vector<LinkId>> members;  // rep -> links, classes of two or more
  std::vector<std::uint32_t> vertex_rep;  // per device: the smallest of its twin switches (itself if none)
};

// Twin servers: servers cabled alike to the same outside devices (the servers of one leaf
// block), each joined to the first server of its class only when their exchange, device by device
// (the p-th device of one <-> the p-th of the other, every other device fixed), maps links slot
// by slot: for every position p and direction, the p-th devices have the same kind, model,
// reduction bandwidth and packet efficiency and rows of one length, and the k-th link of one
// has the image of the k-th link's far end of the other as its far end, with the same bandwidth,
// latency, class and tier. The exchange is then an automorphism of the cluster graph that maps
// each link with an end in either server to the link of the same slot of its end's image, and
// every shortest path, every adaptive spread, onto those between the images of its ends
// (topology/adaptive_spread.h uses that to compute one spread per pair of classes). Servers are
// tried in index order against the firsts of earlier classes with the same hash of their
// outside links, so the classes depend on the graph alone. O(devices and their links).
struct ServerTwins {
  static constexpr std::uint32_t kNone = UINT32_MAX;
  std::vector<std::uint32_t> server_of, position_of;  // per device; kNone and 0 outside servers
  std::vector<std::vector<std::uint32_t>> devices;    // per server, by position (NodeId order)
  // Per server: the first and second servers of its class (second kNone: a class of one).
  std::vector<std::uint32_t> first, second;
  std::vector<std::uint8_t> touches_server;  // per link: 1 when an end is in a server
  // The image of device v under the exchange of twin servers a and b.
  std::uint32_t image(std::uint32_t v, std::uint32_t a, std::uint32_t b) const {
    const std::uint32_t s = server_of[v];
    if (s != a && s != b) return v;
    return devices[s == a ? b : a][position_of[v]];
  }
  // The canonical pair of devices src and dst, both in servers: the exchange (a1 b1) moves src's
  // server onto the first server of its class, then (a2 b2) moves dst's new server onto the first
  // of its class other than b1 (the second when src's class is dst's). An exchange with a == b
  // moves nothing. Each is an automorphism, so (src, dst) and (this.src, this.dst) have the same
  // shortest paths, spreads and search marks up to the two exchanges: callers compute one per
  // canonical pair (AdaptiveSpreader::spread, Router::route).
  struct Canonical {
    std::uint32_t a1, b1, a2, b2;  // the exchanges, applied in this order
    std::uint32_t src, dst;        // the images of src and dst under both
  };
  Canonical canonical(std::uint32_t src, std::uint32_t dst) const;
  // The image of link l under the exchange of twin servers a and b: the link of the same slot
  // of its moved end's image (its source's out-row when the source moves, else its
  // destination's in-row); l itself when neither end moves.
  LinkId image(const Cluster& cluster, LinkId l, std::uint32_t a, std::uint32_t b) const;
};

class ServerOrbits {
 public:
  // The server whose flows stand for every server of the group, and N, the images of a flow the
  // group moves freely: the servers a transitive group permutes, the blocks a BlockRotation
  // cycles (its flows stand for those of every block), 1 for the switch exchanges alone.
  std::int32_t representative() const { return representative_; }
  std::uint32_t servers() const { return servers_; }
  // The representative of `link`'s orbit (the link itself when no generator moves it).
  LinkId orbit(LinkId link) const {
    const std::uint32_t twin = twins_->rep[link.value];
    const auto it = root_.find(twin);
    return it == root_.end() ? LinkId{twin} : LinkId{it->second};
  }
  // Whether the group is the switch exchanges' alone (ServerSymmetry::twin_orbits): every
  // server's flows run, none stands for another.
  bool twins_only() const { return servers_ == 1; }
  // The switch exchanges' classes, which every group here contains (an orbit is a union of them).
  const std::shared_ptr<const SwitchTwins>& switch_twins() const { return twins_; }
  // The links of the orbit whose representative is `root`, in link order (just `root` for a link
  // no generator moves), and their number.
  std::vector<LinkId> members(LinkId root) const;
  std::size_t orbit_size(LinkId root) const;

 private:
  friend class ServerSymmetry;
  std::int32_t representative_ = -1;
  std::uint32_t servers_ = 0;
  std::shared_ptr<const SwitchTwins> twins_;
  std::unordered_map<std::uint32_t, std::uint32_t> root_;            // twin class moved -> representative
  std::unordered_map<std::uint32_t, std::vector<LinkId>> members_;  // representative -> links
};

// The rotation of a fabric's leaf blocks: rho maps the k-th server of block b onto the k-th
// server of block b + 1 (mod B), device by device, with the devices the block exchanges close
// over (a two-tier fabric's leaves) and fixing the rest (the spines). Blocks are in the order of
// their first servers. rho is the product of the block exchanges (0 B-1) ... (0 2)(0 1) that
// ServerSymmetry checks (each an automorphism), which is the cyclic shift of the blocks when the
// exchanges (0 b) all move the same devices D0 of block 0 and pairwise disjoint devices Db of
// the others: then a device of Db goes to D0 under (0 b) and on to D(b+1) under (0 b+1), the
// other factors fixing it. So rho is an automorphism, and the group it generates with the
// switch exchanges moves every block freely: N = B images of a flow. The link orbits are those
// of the group the exchanges (0 b) generate, which permutes the blocks in every way: the same
// orbits as rho's where no link joins devices of two different blocks (checked): a link with
// one end in block b and the other fixed, or both in b, has the same link of every block as
// its orbit under either.
// What a training iteration folds by (sim/runtime/executor.h): with the default rank order a
// data-parallel shift maps replicas of one block onto those of the next, so every
// data-parallel ring maps onto itself and every pipeline transfer onto the same transfer of
// another replica (docs/network-model.md, "Training iterations folded by the blocks' rotation").
class BlockRotation {
 public:
  static constexpr std::uint32_t kFixed = UINT32_MAX;
  // The link orbits of the group, N = blocks() (ServerOrbits::servers), block 0's first server
  // the representative.
  const ServerOrbits& orbits() const { return orbits_; }
  std::uint32_t blocks() const { return blocks_; }
  // The block of device v, kFixed for a device rho fixes.
  std::uint32_t block(NodeId v) const { return block_[v.value]; }
  // rho^k(v), k >= 0.
  NodeId image(NodeId v, std::uint32_t k = 1) const {
    const std::uint32_t b = block_[v.value];
    if (b == kFixed) return v;
    return NodeId{devices_[static_cast<std::size_t>((b + k) % blocks_) * per_block_ + slot_[v.value]]};
  }

 private:
  friend class ServerSymmetry;
  ServerOrbits orbits_;
  std::uint32_t blocks_ = 0, per_block_ = 0;
  std::vector<std::uint32_t> block_, slot_;  // per device: its block (kFixed) and its slot in it
  std::vector<std::uint32_t> devices_;       // blocks x per_block: block b's device of each slot
};

// The per-cluster facts the group needs (each server's devices), computed once: O(devices).
class ServerSymmetry {
 public:
  // The cluster must outlive this.
  explicit ServerSymmetry(const Cluster& cluster);
  // The group of the servers holding `gpus` (the header), or nothing.
  std::optional<ServerOrbits> orbits(std::span<const NodeId> gpus) const;
  // The rotation of the leaf blocks of the servers holding `gpus` (BlockRotation), mapping those
  // GPUs onto themselves; nothing where orbits() finds no blocks (one block, blocks of different
  // sizes, a block partly in the set), an exchange fails its checks or moves other devices than
  // the two blocks' (a three-tier fat-tree's blocks of different pods exchange whole pods), or a
  // link joins two blocks. O(devices and links of the blocks' devices, + links).
  std::optional<BlockRotation> block_rotation(std::span<const NodeId> gpus) const;
  // The group of the switch exchanges alone: it fixes every device outside the twin classes,
  // every server's included, so it maps onto itself any set of flows between such devices on
  // routes that are functions of the graph (adaptive routing's spreads, a router path no label
  // changes), whatever their pattern: servers() 1, representative() -1, the twin classes the
  // orbits. Nothing when the cluster has no twin switches.
  std::optional<ServerOrbits> twin_orbits() const;
  // The twin servers' classes (ServerTwins), computed on the first call.
  const std::shared_ptr<const ServerTwins>& server_twins() const;

 private:
  using Map = std::unordered_map<std::uint32_t, std::uint32_t>;  // a moved device -> its image
  // Whether the involution `pi` (over its keys; every other device fixed) is an automorphism; if
  // so, `pairs` holds each link with a moved end and its image.
  bool link_images(const Map& pi, std::vector<std::pair<std::uint32_t, std::uint32_t>>& pairs) const;
  const std::shared_ptr<const SwitchTwins>& switch_twins() const;
  // The involution exchanging servers a[k] and b[k] device by device, closed over the links (the
  // header): nothing when two devices would need different images.
  // `sides`, when given, receives each moved pair (a device of a's side, its image) once.
  std::optional<Map> exchange(std::span<const std::uint32_t> a, std::span<const std::uint32_t> b,
                              std::vector<std::pair<std::uint32_t, std::uint32_t>>* sides = nullptr) const;
  // R's servers with their GPUs' positions and R's blocks (orbits(), the header): nothing where
  // R has one server or they differ (sizes, positions, blocks partly in R).
  struct Blocks {
    std::map<std::uint32_t, std::vector<std::uint32_t>> positions;  // server -> its GPUs' positions
    std::vector<std::vector<std::uint32_t>> blocks;                 // each in server order
    std::map<std::uint32_t, std::size_t> block_of;
    std::uint32_t s0 = 0;
    std::vector<std::uint32_t> ranks;  // R's GPUs, sorted (a symmetry must map them onto themselves)
    bool is_rank(std::uint32_t v) const { return std::binary_search(ranks.begin(), ranks.end(), v); }
  };
  std::optional<Blocks> find_blocks(std::span<const NodeId> gpus) const;
  // The orbits of the union-find `parent` over twin classes (orbits()), into `out`.
  void fill_orbits(Map& parent, ServerOrbits& out) const;
  // The outside devices server `s` is cabled to, with (position, direction) of each link, in
  // adjacency order; sorted: what twins share.
  struct Outside {
    std::uint32_t position;
    int direction;
    std::uint32_t far;
    LinkId link;
  };
  std::vector<Outside> outside(std::uint32_t s) const;

  const Cluster& cluster_;
  std::vector<std::vector<std::uint32_t>> devices_;  // per server, in NodeId order
  std::vector<std::uint32_t> server_of_, position_of_;  // per device; UINT32_MAX outside servers
  mutable std::shared_ptr<const SwitchTwins> twins_;    // on the first orbits()
  mutable std::shared_ptr<const ServerTwins> server_twins_;  // on the first server_twins()
};

}  // namespace cs::topo
